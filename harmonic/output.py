"""kubectl's ``-o json|yaml|wide`` for the commands that print data, with stdout holding the data only
(human lines go to stderr). ``--json``, the older flag, stays as an alias of ``-o json``."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click
import yaml

F = TypeVar("F", bound=Callable[..., Any])


def output_option(
    formats: Sequence[str] = ("json", "yaml", "wide"), json_help: str = "Same as -o json."
) -> Callable[[F], F]:
    """``-o/--output`` (one of ``formats``) and the ``--json`` alias, gathered into ``output: str | None``."""

    def decorate(f: F) -> F:
        @functools.wraps(f)
        def wrapper(*args: Any, **kw: Any) -> Any:
            as_json = kw.pop("as_json")
            if as_json and kw["output"] not in (None, "json"):
                raise click.UsageError(f"--json and -o {kw['output']}: give one")
            kw["output"] = "json" if as_json else kw["output"]
            return f(*args, **kw)

        out: Any = click.option("--json", "as_json", is_flag=True, help=json_help)(wrapper)
        return click.option(
            "-o", "--output", type=click.Choice(list(formats)), default=None, help="Output format."
        )(out)

    return decorate


def emit(doc: Any, output: str) -> None:
    """``doc`` on stdout as JSON or YAML (block style, keys in the document's order)."""
    if output == "yaml":
        click.echo(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False), nl=False)
    else:
        click.echo(json.dumps(doc, indent=2))
