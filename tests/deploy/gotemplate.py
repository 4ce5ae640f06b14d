"""A renderer for the subset of Helm's Go templates that ``charts/harmonic`` uses.

Helm itself is not installable here (no Debian or PyPI package ships it), so the chart is rendered in
Python for the tests. Supported: text with ``{{ }}`` actions and ``{{-``/``-}}`` trimming, comments,
``if``/``else if``/``else``/``end``, ``with``, ``range`` over lists, ``define`` and ``include``,
pipelines with parentheses, the fields ``.Values``, ``.Release``, ``.Chart``, ``.`` and ``$``, and the
functions ``include toYaml nindent indent quote eq ne and or not default printf``. Anything else raises
``TemplateError``, so a chart change that needs more fails loudly instead of rendering wrongly.

    python -m tests.deploy.gotemplate charts/harmonic [-f values.yaml] [--namespace NS]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml


class TemplateError(ValueError):
    pass


_ACTION = re.compile(r"{{(-\s)?(.*?)(\s-)?}}", re.S)
_TOKEN = re.compile(r'\s*(?:("(?:[^"\\]|\\.)*")|(\()|(\))|(\|)|([^\s()|]+))')


def _truthy(v: Any) -> bool:
    return bool(v) if not isinstance(v, (int, float)) or isinstance(v, bool) else v != 0


def _to_yaml(v: Any) -> str:
    return yaml.safe_dump(v, default_flow_style=False, sort_keys=True).rstrip("\n")


def _indent(n: int, s: Any) -> str:
    pad = " " * int(n)
    return "\n".join(pad + line for line in str(s).split("\n"))


def _go_str(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


# ----------------------------------------------------------------------------- parsing
def _lex(src: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    trim_next = False
    for m in _ACTION.finditer(src):
        text = src[pos : m.start()]
        if trim_next:
            text = text.lstrip()
        if m.group(1):
            text = text.rstrip()
        out.append(("text", text))
        body = m.group(2).strip()
        if not (body.startswith("/*") and body.endswith("*/")):
            out.append(("action", body))
        trim_next = bool(m.group(3))
        pos = m.end()
    tail = src[pos:]
    out.append(("text", tail.lstrip() if trim_next else tail))
    return out


def _parse(tokens: list[tuple[str, str]], i: int, stop: tuple[str, ...]) -> tuple[list[Any], int, str]:
    """Nodes until one of ``stop`` keywords; returns (nodes, next index, the keyword action)."""
    nodes: list[Any] = []
    while i < len(tokens):
        kind, val = tokens[i]
        i += 1
        if kind == "text":
            if val:
                nodes.append(("text", val))
            continue
        word = val.split(None, 1)[0] if val else ""
        rest = val[len(word) :].strip()
        if word in stop:
            return nodes, i, val
        if word == "if":
            branches = []
            cond = rest
            while True:
                body, i, closer = _parse(tokens, i, ("end", "else"))
                branches.append((cond, body))
                if closer == "end":
                    break
                cond = closer[4:].strip()
                cond = cond[2:].strip() if cond.startswith("if") else ""
                if not cond:
                    body, i, _ = _parse(tokens, i, ("end",))
                    branches.append((None, body))
                    break
            nodes.append(("if", branches))
        elif word in ("with", "range"):
            body, i, closer = _parse(tokens, i, ("end", "else"))
            other: list[Any] = []
            if closer != "end":
                other, i, _ = _parse(tokens, i, ("end",))
            nodes.append((word, rest, body, other))
        elif word == "define":
            body, i, _ = _parse(tokens, i, ("end",))
            nodes.append(("define", json.loads(rest), body))
        elif word in ("end", "else", "template", "block"):
            raise TemplateError(f"unsupported or unbalanced action {{{{ {val} }}}}")
        else:
            nodes.append(("action", val))
    if stop:
        raise TemplateError(f"missing {{{{ end }}}} (expected one of {stop})")
    return nodes, i, ""


# ----------------------------------------------------------------------------- evaluation
class Renderer:
    def __init__(self, chart_dir: Path, values: dict[str, Any], namespace: str, release: str) -> None:
        chart = yaml.safe_load((chart_dir / "Chart.yaml").read_text())
        self.root = {
            "Values": values,
            "Release": {"Namespace": namespace, "Name": release, "Service": "Helm"},
            "Chart": {
                "Name": chart["name"],
                "Version": chart["version"],
                "AppVersion": chart.get("appVersion"),
            },
        }
        self.defines: dict[str, list[Any]] = {}
        self.templates: dict[str, list[Any]] = {}
        for path in sorted((chart_dir / "templates").iterdir()):
            nodes, _, _ = _parse(_lex(path.read_text()), 0, ())
            for n in nodes:
                if n[0] == "define":
                    self.defines[n[1]] = n[2]
            self.templates[path.name] = [n for n in nodes if n[0] != "define"]

    def render(self, name: str) -> str:
        return self._run(self.templates[name], self.root)

    def _run(self, nodes: list[Any], dot: Any) -> str:
        out: list[str] = []
        for n in nodes:
            kind = n[0]
            if kind == "text":
                out.append(n[1])
            elif kind == "action":
                out.append(_go_str(self._pipeline(n[1], dot)))
            elif kind == "if":
                for cond, body in n[1]:
                    if cond is None or _truthy(self._pipeline(cond, dot)):
                        out.append(self._run(body, dot))
                        break
            elif kind == "with":
                v = self._pipeline(n[1], dot)
                out.append(self._run(n[2], v) if _truthy(v) else self._run(n[3], dot))
            elif kind == "range":
                v = self._pipeline(n[1], dot)
                if _truthy(v):
                    out.extend(self._run(n[2], item) for item in v)
                else:
                    out.append(self._run(n[3], dot))
        return "".join(out)

    def _pipeline(self, src: str, dot: Any) -> Any:
        tokens = [
            next(g for g in m.groups() if g is not None) for m in _TOKEN.finditer(src) if m.group(0).strip()
        ]
        value, i = self._eval_pipe(tokens, 0, dot)
        if i != len(tokens):
            raise TemplateError(f"cannot parse {src!r}")
        return value

    def _eval_pipe(self, toks: list[str], i: int, dot: Any) -> tuple[Any, int]:
        value: Any = None
        first = True
        while True:
            args: list[Any] = []
            head: str | None = None
            while i < len(toks) and toks[i] not in ("|", ")"):
                t = toks[i]
                if t == "(":
                    v, i = self._eval_pipe(toks, i + 1, dot)
                    if i >= len(toks) or toks[i] != ")":
                        raise TemplateError("unbalanced parentheses")
                    args.append(v)
                elif (
                    head is None
                    and not args
                    and re.fullmatch(r"[A-Za-z]\w*", t)
                    and t not in ("true", "false", "nil")
                ):
                    head = t
                else:
                    args.append(self._operand(t, dot))
                i += 1
            if not first:
                args.append(value)
            value = self._call(head, args) if head else (args[0] if len(args) == 1 else _bad(args))
            first = False
            if i < len(toks) and toks[i] == "|":
                i += 1
                continue
            return value, i

    def _operand(self, t: str, dot: Any) -> Any:
        if t.startswith('"'):
            return json.loads(t)
        if t in ("true", "false"):
            return t == "true"
        if t == "nil":
            return None
        if re.fullmatch(r"-?\d+", t):
            return int(t)
        if t == ".":
            return dot
        if t.startswith("$"):
            base, path = self.root, t[1:]
        elif t.startswith("."):
            base, path = dot, t
        else:
            raise TemplateError(f"unsupported operand {t!r}")
        for part in [p for p in path.split(".") if p]:
            if not isinstance(base, dict):
                raise TemplateError(f"{t}: cannot take field {part!r} of {type(base).__name__}")
            base = base.get(part)
        return base

    def _call(self, fn: str, a: list[Any]) -> Any:
        if fn == "include":
            name, ctx = a
            if name not in self.defines:
                raise TemplateError(f"include of undefined template {name!r}")
            return self._run(self.defines[name], ctx)
        simple = {
            "toYaml": lambda v: _to_yaml(v),
            "nindent": lambda n, s: "\n" + _indent(n, s),
            "indent": _indent,
            "quote": lambda v: json.dumps(_go_str(v)),
            "eq": lambda x, y: x == y,
            "ne": lambda x, y: x != y,
            "not": lambda v: not _truthy(v),
            "default": lambda d, v: v if _truthy(v) else d,
            "printf": lambda f, *xs: re.sub(r"%[sdv]", "{}", f).format(*[_go_str(x) for x in xs]),
        }
        if fn == "and":
            return next((v for v in a if not _truthy(v)), a[-1])
        if fn == "or":
            return next((v for v in a if _truthy(v)), a[-1])
        if fn not in simple:
            raise TemplateError(f"unsupported function {fn!r}")
        return simple[fn](*a)


def _bad(args: list[Any]) -> Any:
    raise TemplateError(f"cannot evaluate {args!r}")


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def render_chart(
    chart_dir: Path, overrides: dict[str, Any] | None = None, namespace: str = "harmonic-system"
) -> list[dict[str, Any]]:
    """Every manifest the chart renders (``helm template`` without hooks), as parsed objects."""
    values = _merge(yaml.safe_load((chart_dir / "values.yaml").read_text()), overrides or {})
    r = Renderer(chart_dir, values, namespace, "harmonic")
    docs: list[dict[str, Any]] = []
    for name in r.templates:
        if name.startswith("_") or not name.endswith(".yaml"):
            continue
        for doc in yaml.safe_load_all(r.render(name)):
            if doc:
                docs.append(doc)
    return docs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("chart", type=Path)
    ap.add_argument("-f", "--values", type=Path, action="append", default=[])
    ap.add_argument("--namespace", default="harmonic-system")
    a = ap.parse_args(argv)
    overrides: dict[str, Any] = {}
    for f in a.values:
        overrides = _merge(overrides, yaml.safe_load(f.read_text()) or {})
    docs = render_chart(a.chart, overrides, a.namespace)
    sys.stdout.write(yaml.safe_dump_all(docs, sort_keys=False, default_flow_style=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
