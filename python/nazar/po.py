"""Machine-translate a gettext catalog (.po / .pot) with a nazar model, keeping every placeholder.

    python3 -m nazar.po MODEL messages.pot -o fr.po [--all] [--beam K] [--no-protect]

Each untranslated entry (``msgstr ""``; every entry with ``--all``) gets the model's translation,
decoded with ``protect=True`` (docs/decoding.md "Constraints and protected spans"): printf and
brace placeholders, ``--options``, URLs and tags of the msgid come out verbatim. A plural entry's
``msgid`` fills ``msgstr[0]`` and its ``msgid_plural`` the other forms. Entries that were
translated here are marked ``#, fuzzy`` so that a translator reviews them (gettext tools ignore
fuzzy entries until then). Multi-line strings are translated line by line (``\\n`` kept), each
without its leading and trailing white space (put back around the translation) and with inner
runs of white space as one space. The
rest of the file — header, comments, references, contexts, entries already translated — is
written back byte for byte. A span that could not be placed is reported on stderr with the
entry's line number, and the entry is still written (fuzzy).

The parser reads the PO format as GNU gettext writes it: entries separated by blank lines;
keywords ``msgctxt``, ``msgid``, ``msgid_plural``, ``msgstr``, ``msgstr[N]``, each followed by
one or more C-escaped "..." strings; ``#`` comment lines (``#~`` obsolete entries are kept as
they are). A line it cannot read is an error naming the file and line.
"""

import argparse
import re
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "a": "\a", "b": "\b",
            "f": "\f", "v": "\v"}
_KEYWORD = re.compile(r'^(msgctxt|msgid_plural|msgid|msgstr(?:\[(\d+)\])?)\s+"(.*)"\s*$')
_CONTINUATION = re.compile(r'^\s*"(.*)"\s*$')


class PoError(ValueError):
    """A line of the catalog that is not valid PO (the message names file and line)."""


def unescape(s: str, where: str) -> str:
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            if i + 1 >= len(s) or s[i + 1] not in _ESCAPES:
                raise PoError(f"{where}: unknown escape {s[i:i + 2]!r}")
            out.append(_ESCAPES[s[i + 1]])
            i += 2
        elif c == '"':
            raise PoError(f"{where}: unescaped quote in a string")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def escape(s: str) -> str:
    return (s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
            .replace("\t", "\\t").replace("\r", "\\r"))


@dataclass
class Entry:
    """One entry: its lines as read, and the strings of its keywords."""

    lines: List[str]
    first_line: int  # 1-based line number of its first line
    fields: Dict[str, str] = field(default_factory=dict)  # msgid, msgid_plural, msgstr, msgstr[1]...
    order: List[str] = field(default_factory=list)  # keywords in file order

    @property
    def is_header(self) -> bool:
        return self.fields.get("msgid") == "" and "msgctxt" not in self.fields

    def msgstr_keys(self) -> List[str]:
        return [k for k in self.order if k.startswith("msgstr")]

    def translated(self) -> bool:
        return any(self.fields[k] for k in self.msgstr_keys())

    def flags(self) -> List[str]:
        out = []
        for line in self.lines:
            if line.startswith("#,"):
                out += [f.strip() for f in line[2:].split(",") if f.strip()]
        return out


def parse(text: str, path: str) -> List[Entry]:
    """The entries of a catalog (obsolete ``#~`` entries and comments stay in their lines)."""
    entries: List[Entry] = []
    cur: Optional[Entry] = None
    key: Optional[str] = None
    for n, line in enumerate(text.split("\n"), 1):
        where = f"{path}:{n}"
        if not line.strip():
            if cur is not None:
                entries.append(cur)
            cur, key = None, None
            continue
        if cur is None:
            cur = Entry([], n)
        cur.lines.append(line)
        if line.startswith("#"):
            continue
        m = _KEYWORD.match(line)
        if m:
            key = m.group(1)
            if key in cur.fields:
                raise PoError(f"{where}: {key} given twice in one entry")
            cur.fields[key] = unescape(m.group(3), where)
            cur.order.append(key)
            continue
        m = _CONTINUATION.match(line)
        if m and key is not None:
            cur.fields[key] += unescape(m.group(1), where)
            continue
        raise PoError(f"{where}: expected a keyword (msgid, msgstr, ...), a string or a comment, "
                      f"got {line[:60]!r}")
    if cur is not None:
        entries.append(cur)
    for e in entries:
        if any(not l.startswith("#") for l in e.lines) and "msgid" not in e.fields:
            raise PoError(f"{path}:{e.first_line}: an entry without msgid")
    return entries


def render(e: Entry, translations: Dict[str, str]) -> List[str]:
    """The entry's lines with the msgstr strings in `translations` replaced, flagged fuzzy."""
    out: List[str] = []
    flagged = "fuzzy" in e.flags()
    skip = False  # continuation lines of a replaced string
    for line in e.lines:
        if not flagged and line.startswith("#,"):
            out.append(line + ", fuzzy")
            flagged = True
            continue
        if not flagged and not line.startswith("#"):
            out.append("#, fuzzy")  # flags go after the other comments, before the keywords
            flagged = True
        m = _KEYWORD.match(line)
        if m:
            skip = m.group(1) in translations
            if skip:
                out.append(f'{m.group(1)} "{escape(translations[m.group(1)])}"')
                continue
        elif skip and _CONTINUATION.match(line):
            continue
        out.append(line)
    return out


def _core(line: str) -> str:
    """What the model reads of a line: without its leading and trailing white space, inner runs
    of it as one space (column padding in --help texts); the padding is put back around the
    translation."""
    return " ".join(line.split())


def translate_catalog(translator, text: str, path: str, *, all_entries: bool = False,
                      beam: Optional[int] = None, protect: bool = True,
                      report=sys.stderr) -> Tuple[str, Dict[str, int]]:
    """The catalog with its entries translated, and counts (entries, translated, unplaced)."""
    entries = parse(text, path)
    todo: List[Tuple[Entry, Dict[str, str]]] = []  # entry, msgstr key -> source string
    for e in entries:
        if "msgid" not in e.fields or e.is_header or any(l.startswith("#~") for l in e.lines):
            continue
        if e.translated() and not all_entries:
            continue
        sources = {}
        for k in e.msgstr_keys():
            plural_form = k not in ("msgstr", "msgstr[0]")
            sources[k] = e.fields["msgid_plural" if plural_form and "msgid_plural" in e.fields
                                  else "msgid"]
        todo.append((e, sources))
    lines = sorted({_core(part) for _, src in todo for s in src.values()
                    for part in s.split("\n") if part.strip()})
    options = {} if beam is None else {"beam": beam}
    results = {}
    if lines:
        for line, t in zip(lines, translator.translate(lines, protect=protect, **options)):
            results[line] = t
    counts = {"entries": len(entries), "translated": len(todo), "unplaced": 0}
    done = {}
    for e, sources in todo:
        out = {}
        for k, s in sources.items():
            parts = []
            for part in s.split("\n"):
                if not part.strip():
                    parts.append(part)
                    continue
                t = results[_core(part)]
                lead = part[: len(part) - len(part.lstrip())]
                trail = part[len(part.rstrip()):]
                parts.append(lead + t.text + trail)
                if t.unmet:
                    counts["unplaced"] += len(t.unmet)
                    print(f"{path}:{e.first_line}: not placed: "
                          + ", ".join(repr(u) for u in t.unmet), file=report)
            out[k] = "\n".join(parts)
        done[id(e)] = out
    written: List[str] = []
    for i, e in enumerate(entries):
        if i:
            written.append("")
        written += render(e, done[id(e)]) if id(e) in done else e.lines
    return "\n".join(written) + ("\n" if text.endswith("\n") else ""), counts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m nazar.po", description=__doc__.split("\n")[0])
    ap.add_argument("model", help="model file (model.safetensors)")
    ap.add_argument("catalog", help=".po or .pot file")
    ap.add_argument("-o", "--output", required=True, help="the translated catalog ('-': stdout)")
    ap.add_argument("--all", action="store_true", help="translate entries already translated too")
    ap.add_argument("--beam", type=int, default=None, help="beam size (default: the model's)")
    ap.add_argument("--no-protect", action="store_true", help="do not protect placeholders")
    a = ap.parse_args(argv)
    import nazar

    with open(a.catalog, encoding="utf-8") as f:
        text = f.read()
    try:
        out, counts = translate_catalog(nazar.Translator(a.model), text, a.catalog,
                                        all_entries=a.all, beam=a.beam,
                                        protect=not a.no_protect)
    except PoError as e:
        print(f"nazar.po: error: {e}", file=sys.stderr)
        return 2
    if a.output == "-":
        sys.stdout.write(out)
    else:
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(out)
    print(f"{a.catalog}: {counts['entries']} entries, {counts['translated']} translated "
          f"(marked fuzzy), {counts['unplaced']} protected spans not placed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
