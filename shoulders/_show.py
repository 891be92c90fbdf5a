"""Print a package object's source in a notebook, so the page shows the code that really runs."""
from __future__ import annotations

import inspect
from typing import Any


def source(obj: Any) -> str:
    """The source text of a module, class, function or method of ``shoulders`` (or anything inspectable)."""
    target = obj.__func__ if inspect.ismethod(obj) else obj
    try:
        return inspect.getsource(target)
    except (TypeError, OSError) as err:
        raise TypeError(f"cannot show the source of {obj!r}: {err}") from err


def show(obj: Any) -> None:
    """Display the source of ``obj`` with syntax highlighting in Jupyter, or print it elsewhere."""
    text = source(obj)
    try:
        from IPython import get_ipython
        from IPython.display import Code, display

        if get_ipython() is not None:
            display(Code(text, language="python"))
            return
    except ImportError:  # pragma: no cover - IPython is a dependency of ipywidgets
        pass
    print(text)
