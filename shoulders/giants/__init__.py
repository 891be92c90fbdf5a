"""Giants: the book's pre-trained models, trained once per machine and scale and shared by every later page.

>>> import shoulders as sh
>>> bert = sh.giants.load("bert")          # cached: seconds; not cached: trained now, with a progress bar
>>> bert.model, bert.tokenizer, bert.history, bert.card["metrics"]

* :func:`load` -- the giant from the cache, else trained through its recipe (or, opted in, downloaded);
* :func:`cached` -- its cache folder, or ``None``;
* :func:`export` / :func:`import_folder` -- a folder with ``model.safetensors``, the config, the tokenizer, the
  history and a model card with the sha256 of every file; importing it gives bit-identical weights
  (``python -m shoulders.giants export bert DIR`` / ``import DIR`` / ``list``);
* :data:`CATALOGUE`, :func:`names`, :func:`get`, :func:`register` -- which giants exist (:class:`Giant`: recipe +
  config presets + data).

Two processes asking for the same giant train it once: the second waits for the first and loads its result.
"""
from __future__ import annotations

from .catalogue import CATALOGUE, Giant, get, names, register
from .store import GiantError, Loaded, cached, export, import_folder, key, load, published_entry, root, verify

__all__ = ["CATALOGUE", "Giant", "GiantError", "Loaded", "cached", "export", "get", "import_folder", "key", "load",
           "names", "published_entry", "register", "root", "verify"]
