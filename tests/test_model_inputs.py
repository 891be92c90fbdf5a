"""Clear errors at a model's door: out-of-range, float, empty ids and bad labels name the argument, its shape and
dtype and the allowed range (not ``IndexError: index out of range in self`` or a NaN loss); a vocabulary token
that UTF-8 cannot hold is named when saving."""
from __future__ import annotations

import pytest
import torch

from shoulders import heads
from shoulders.models.bert import BertConfig, BertForPreTraining, BertModel
from shoulders.models.ids import check_ids, check_labels
from shoulders.models.transformer import TransformerConfig
from shoulders.text import Vocab

BAD_IDS = [
    (torch.tensor([[5, 200]]), ValueError, r"input_ids holds ids from 5 to 200 but must lie in \[0, 100\)"),
    (torch.tensor([[-1, 3]]), ValueError, r"from -1 to 3 but must lie in \[0, 100\)"),
    (torch.tensor([[1.0, 2.0]]), TypeError, r"input_ids must hold integer token ids .* dtype torch.float32"),
    (torch.zeros(0, 4, dtype=torch.long), ValueError, r"input_ids is an empty batch \(shape \(0, 4\)"),
    (torch.zeros(2, 0, dtype=torch.long), ValueError, r"input_ids holds sequences of length 0"),
    (torch.tensor([1, 2]), ValueError, r"input_ids must be \(B, T\), got shape \(2,\)"),
]


@pytest.mark.parametrize("ids, error, message", BAD_IDS)
def test_bert_names_the_bad_argument(ids, error, message):
    model = BertForPreTraining(BertConfig.named("tiny", vocab_size=100, max_len=16))
    with pytest.raises(error, match=message):
        model(ids)


def test_bert_labels_and_segments_are_checked():
    model = BertForPreTraining(BertConfig.named("tiny", vocab_size=100, max_len=16))
    ids = torch.tensor([[2, 7, 8, 3]])
    with pytest.raises(ValueError, match=r"token_type_ids holds ids from 0 to 5 but must lie in \[0, 2\)"):
        model(ids, torch.tensor([[0, 0, 1, 5]]))
    with pytest.raises(ValueError, match=r"mlm_labels holds labels from 7 to 300 .* \(or -100, ignored\)"):
        model(ids, mlm_labels=torch.tensor([[-100, 7, 300, -100]]))
    with pytest.raises(ValueError, match=r"nsp_labels holds labels from 0 to 2 but must lie in \[0, 2\)"):
        model(ids.repeat(2, 1), nsp_labels=torch.tensor([0, 2]))
    out = model(ids, mlm_labels=torch.tensor([[-100, 7, -100, -100]]), nsp_labels=torch.tensor([1]))
    assert torch.isfinite(out["loss"])


def test_transformer_checks_source_and_target():
    cfg = TransformerConfig.preset("smoke", src_vocab=50, tgt_vocab=40)
    model = cfg.build()
    src, tgt_in, tgt_out = cfg.example_batch()
    with pytest.raises(ValueError, match=r"src holds ids .* must lie in \[0, 50\)"):
        model(src + 1000, tgt_in, tgt_out)
    with pytest.raises(ValueError, match=r"tgt_in holds ids .* must lie in \[0, 40\)"):
        model(src, tgt_in + 1000, tgt_out)
    with pytest.raises(ValueError, match=r"tgt_out holds labels .* must lie in \[0, 40\)"):
        model(src, tgt_in, tgt_out + 1000)
    with pytest.raises(TypeError, match="src must hold integer token ids"):
        model(src.float(), tgt_in, tgt_out)


def test_the_checks_themselves():
    check_ids(torch.zeros(0, 3, dtype=torch.long), "x", 5, allow_empty=True)
    check_labels(torch.tensor([-100, -100]), "y", 3, ignore_index=-100)  # nothing predicted: fine
    with pytest.raises(TypeError, match="y must be integer class ids"):
        check_labels(torch.tensor([0.0]), "y", 3)
    with pytest.raises(ValueError, match="y is empty"):
        check_labels(torch.zeros(0, dtype=torch.long), "y", 3)
    with pytest.raises(TypeError, match="x must be a tensor"):
        check_ids([1, 2], "x", 5)


def test_vocab_save_names_a_token_utf8_cannot_hold(tmp_path):
    vocab = Vocab.build([["a", "\udc80x", "b"]], unk=None, min_freq=1)
    with pytest.raises(ValueError, match=r"token \d \('\\udc80x'\) cannot be written as UTF-8"):
        vocab.save(tmp_path / "v.json")
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_task_heads_name_bad_labels():
    enc = BertModel(BertConfig.named("tiny", vocab_size=100, max_len=16))
    ids = torch.tensor([[2, 7, 8, 3], [2, 9, 3, 0]])
    with pytest.raises(ValueError, match=r"labels holds labels from 0 to 3 but must lie in \[0, 2\)"):
        heads.SequenceClassifier(enc, 2)(ids, labels=torch.tensor([0, 3]))
    with pytest.raises(TypeError, match="labels must be integer class ids"):
        heads.SequenceClassifier(enc, 2)(ids, labels=torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"from 0 to 5 but must lie in \[0, 3\) \(or -100, ignored\)"):
        heads.TokenTagger(enc, 3)(ids, labels=torch.tensor([[-100, 0, 5, -100], [-100, 1, -100, -100]]))
    with pytest.raises(ValueError, match=r"end_positions holds labels from 1 to 9 but must lie in \[0, 4\)"):
        heads.SpanExtractor(enc)(ids, start_positions=torch.tensor([1, 1]), end_positions=torch.tensor([1, 9]))
    choice = heads.MultipleChoice(enc)
    with pytest.raises(ValueError, match=r"input_ids must be \(B, C, T\)"):
        choice(ids, labels=torch.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"labels holds labels from 0 to 2 but must lie in \[0, 2\)"):
        choice(torch.stack([ids, ids], 1), labels=torch.tensor([0, 2]))
    out = choice(torch.stack([ids, ids], 1), labels=torch.tensor([0, 1]))
    assert torch.isfinite(out["loss"])


def _window_models():
    from shoulders.models.lbl import LBLConfig
    from shoulders.models.nnlm import NNLMConfig

    return [c.preset("smoke", vocab_size=50) for c in (NNLMConfig, LBLConfig)]


@pytest.mark.parametrize("cfg", _window_models(), ids=lambda c: type(c).__name__)
def test_window_language_models_name_bad_contexts_and_targets(cfg):
    model = cfg.build()
    x, y = cfg.example_batch()
    k = cfg.n - 1
    with pytest.raises(ValueError, match=r"x holds ids from .* but must lie in \[0, 50\)"):
        model(x + 100, y)
    with pytest.raises(ValueError,
                       match=rf"x must hold {k} ids per row \(the model's window\), got shape \(2, {k + 1}\)"):
        model(torch.cat([x, x[:, :1]], 1), y)
    with pytest.raises(TypeError, match="x must hold integer token ids"):
        model(x.float(), y)
    with pytest.raises(ValueError, match=r"y holds labels from .* must lie in \[0, 50\)"):
        model(x, y + 100)
    with pytest.raises(ValueError, match="x is an empty batch"):
        model(x[:0], y[:0])
    assert torch.isfinite(model(x, y))


def test_cw_and_recurrent_lms_name_bad_ids():
    from shoulders.models.cw import CWConfig
    from shoulders.models.rnnlm import RNNLMConfig

    cw = CWConfig.preset("smoke", vocab_size=50).build()
    windows = cw.cfg.example_batch()
    with pytest.raises(ValueError, match=r"windows holds ids from .* must lie in \[0, 50\)"):
        cw(windows + 100)
    with pytest.raises(ValueError, match=r"corrupt holds ids from .* must lie in \[0, 50\)"):
        cw(windows, torch.full((2, 3), 77))
    with pytest.raises(ValueError, match=r"windows must hold \d+ ids per row"):
        cw(windows[:, :-1])
    rnn = RNNLMConfig.preset("smoke", vocab_size=50, adaptive_cutoffs=None).build()
    x, y = rnn.cfg.example_batch()
    with pytest.raises(ValueError, match=r"x holds ids from .* must lie in \[0, 50\)"):
        rnn(x + 100, y)
    with pytest.raises(ValueError, match=r"y holds labels from .* must lie in \[0, 50\)"):
        rnn(x, y - 100)
    with pytest.raises(ValueError, match="x holds sequences of length 0"):
        rnn(x[:, :0], y[:, :0])
    assert torch.isfinite(rnn(x, y)) and torch.isfinite(cw(windows))


@pytest.mark.parametrize("arch", ["sg", "cbow"])
def test_word2vec_names_bad_words(arch):
    from shoulders.models.word2vec import Word2VecConfig

    cfg = Word2VecConfig.preset("smoke", vocab_size=60, arch=arch)
    model = cfg.build()
    batch = cfg.example_batch()
    x, y = batch[0], batch[1]
    rest = {"mask": batch[2]} if arch == "cbow" else {}
    with pytest.raises(ValueError, match=r"x holds ids from .* must lie in \[0, 60\)"):
        model(x + 100, y, **rest)
    with pytest.raises(ValueError, match=r"y holds labels from .* must lie in \[0, 60\)"):
        model.sgd_step(x, y + 100, lr=0.01, **rest)
    want = r"x must be \(B,\)" if arch == "sg" else r"x must be \(B, T\)"
    with pytest.raises(ValueError, match=want):
        model(x[None] if arch == "sg" else x[0], y, **rest)
    assert torch.isfinite(model(x, y, **rest))


def test_glove_and_fasttext_name_bad_inputs():
    from shoulders.models.fasttext import FastTextConfig, SubwordConfig
    from shoulders.models.glove import GloVeConfig

    gcfg = GloVeConfig.preset("smoke", vocab_size=40)
    glove = gcfg.build()
    i, j, x = gcfg.example_batch()
    with pytest.raises(ValueError, match=r"j holds ids from .* must lie in \[0, 40\)"):
        glove(i, j + 40, x)
    with pytest.raises(ValueError, match="x must hold one positive co-occurrence count per entry"):
        glove(i, j, x - 1000)
    assert torch.isfinite(glove(i, j, x))
    fcfg = FastTextConfig.preset("smoke", vocab_size=30, word_ngrams=1, num_labels=2)
    clf = fcfg.build()
    ids, offsets, labels = fcfg.example_batch()
    with pytest.raises(ValueError, match=r"ids holds ids from .* must lie in \[0, 30\)"):
        clf(ids + 30, offsets, labels)
    with pytest.raises(ValueError, match=r"offsets holds ids from 0 to 99 but must lie in \[0, 13\)"):
        clf(ids, torch.tensor([0, 4, 99]), labels)
    with pytest.raises(ValueError, match=r"labels holds labels from .* must lie in \[0, 2\)"):
        clf(ids, offsets, labels + 2)
    assert torch.isfinite(clf(ids, offsets, labels))
    sub = SubwordConfig.preset("smoke", vocab_size=25).build()
    with pytest.raises(ValueError, match=r"x holds ids from 3 to 25 but must lie in \[0, 25\)"):
        sub(torch.tensor([3, 25]), torch.tensor([1, 2]))
    with pytest.raises(ValueError, match=r"y holds labels from .* must lie in \[0, 25\)"):
        sub.sgd_step(torch.tensor([3, 4]), torch.tensor([1, 90]))
