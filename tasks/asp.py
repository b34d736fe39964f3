"""clingo helpers shared by task code and learners (``tasks/`` is the bottom layer, so they live here)."""

from __future__ import annotations

import clingo


def rejection(text: str) -> str | None:
    """clingo's complaint about ``text``, parsed and grounded on no data; None when it accepts it.

    Grounding without facts is cheap and is where clingo reports unsafe variables.
    """
    messages: list[str] = []
    ctl = clingo.Control(["--warn=none"], logger=lambda _code, msg: messages.append(msg))
    try:
        ctl.add("base", [], text)
        ctl.ground([("base", [])])
    except RuntimeError as e:
        return "".join(messages).strip() or str(e)
    return None
