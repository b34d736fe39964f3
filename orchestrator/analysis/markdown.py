"""The two pieces of Markdown every generated docs table is made of: a percentage and a table."""

from __future__ import annotations


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *("| " + " | ".join(r) + " |" for r in rows),
    ]
