"""python -m nazar.po: a gettext catalog in, its untranslated entries translated (docs/decoding.md)."""

import io

import pytest

import nazar
from nazar import po

CATALOG = r'''# A comment that stays.
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"
"Plural-Forms: nplurals=2; plural=(n > 1);\n"

#: src/main.c:10
#, c-format
msgid "a b c"
msgstr ""

msgctxt "menu"
msgid "d e"
msgstr "already"

#: src/main.c:20
msgid ""
"  h g\n"
"f"
msgstr ""

msgid "b"
msgid_plural "b b"
msgstr[0] ""
msgstr[1] ""

#~ msgid "old"
#~ msgstr "vieux"
'''


def test_untranslated_entries_are_translated_and_the_rest_kept(model_path):
    tr = nazar.Translator(model_path)
    err = io.StringIO()
    out, counts = po.translate_catalog(tr, CATALOG, "t.po", report=err)
    want = {s: t.text for s, t in zip(["a b c", "h g", "f", "b", "b b"],
                                       tr.translate(["a b c", "h g", "f", "b", "b b"], protect=True))}
    assert counts == {"entries": 6, "translated": 3, "unplaced": 0}
    entries = {e.fields.get("msgctxt", "") + "|" + e.fields["msgid"]: e
               for e in po.parse(out, "out.po") if "msgid" in e.fields}
    first = entries["|a b c"]
    assert first.fields["msgstr"] == want["a b c"]
    assert "#, c-format, fuzzy" in first.lines and "#: src/main.c:10" in first.lines
    assert entries["menu|d e"].fields["msgstr"] == "already"  # translated: kept, not fuzzy
    assert "fuzzy" not in entries["menu|d e"].flags()
    multi = entries["|  h g\nf"]
    assert multi.fields["msgstr"] == "  " + want["h g"] + "\n" + want["f"]
    assert multi.lines[1] == "#, fuzzy"  # after the reference, before the keywords
    plural = entries["|b"]
    assert plural.fields["msgstr[0]"] == want["b"] and plural.fields["msgstr[1]"] == want["b b"]
    # header, comments and the obsolete entry byte for byte
    assert out.startswith(CATALOG.split("#: src/main.c:10")[0])
    assert out.endswith('#~ msgid "old"\n#~ msgstr "vieux"\n')
    # --all translates the translated entry too
    out_all, counts_all = po.translate_catalog(tr, CATALOG, "t.po", all_entries=True)
    assert counts_all["translated"] == 4


def test_escapes_round_trip_and_errors_name_the_line():
    assert po.unescape(r'a\"b\\c\n\t', "x") == 'a"b\\c\n\t'
    assert po.escape('a"b\\c\n\t') == r'a\"b\\c\n\t'
    with pytest.raises(po.PoError, match=r"bad.po:3: expected a keyword"):
        po.parse('msgid "a"\nmsgstr ""\nnonsense\n', "bad.po")
    with pytest.raises(po.PoError, match=r"bad.po:1: unknown escape"):
        po.parse('msgid "a\\q"\n', "bad.po")
    with pytest.raises(po.PoError, match=r"bad.po:2: msgid given twice"):
        po.parse('msgid "a"\nmsgid "b"\n', "bad.po")


def test_command_line(model_path, tmp_path, capsys):
    src = tmp_path / "in.po"
    src.write_text(CATALOG, encoding="utf-8")
    assert po.main([model_path, str(src), "-o", str(tmp_path / "out.po")]) == 0
    assert "6 entries, 3 translated (marked fuzzy)" in capsys.readouterr().err
    (tmp_path / "bad.po").write_text('msgid "a"\nbroken\n', encoding="utf-8")
    assert po.main([model_path, str(tmp_path / "bad.po"), "-o", "-"]) == 2
    assert "bad.po:2: expected a keyword" in capsys.readouterr().err
