#!/usr/bin/env python3
"""Size limits of the sources (ctest lint.sizes; the project's rule, docs/design.md §7):
no tracked .h/.cpp under nazar/, cli/, apps/ or python/src/ and no tracked .py file (the package
python/nazar/, the tests, fixture generators, benchmarks and scripts) over 500 lines, and no
function whose body is over 80 lines.

A file may carry, among its first 10 lines, one or more reason lines that start with `// size:`:
    // size: the table of configuration keys (data): over 500 lines; make_table() over 80.
Such a line lifts the 500-line limit for the file, and the 80-line limit only for the functions
it names as `name()` (the unqualified name, e.g. `make_table()`; a constructor as `Trainer()`).

What counts as a function: a brace block at namespace or class scope whose head has a parameter
list (`f(...) {`, `S::f(...) const {`, a constructor with an initializer list, an operator,
PYBIND11_MODULE(...) {). Its body is the lines strictly between the line of its `{` and the line
of its `}`. Lambdas and local classes inside a function are part of that function's body. Not
functions: namespace, class/struct/union/enum bodies (their member functions are checked one by
one), and initializers at namespace or class scope (`T x = {...}`, `T x{...}`, a lambda assigned
to a variable at namespace scope: its body is not checked). Comments, string and character
literals and preprocessor lines are ignored.

Python files follow the same rules, read with the ast module. The reason lines start with
`# size:` (among the first 10 lines, before the docstring or after it), e.g.
    # size: the table of test cases (data): over 500 lines; cases() over 80.
A function is a `def` (or `async def`) at module or class scope, including one under a
module-level `if`/`try`/`with` (e.g. `if torch is not None:`); its body is the lines from its
first statement (the docstring included) to its last, comments and blank lines among them.
Nested functions, lambdas and classes inside a function are part of that function's body; the
methods of a class are checked one by one, named `Class.method` (a reason names `method()`).

`check-sizes.py --self-test` runs the checker on made-up sources with known answers.
Exit codes: 0 within limits, 1 a file or function over its limit or a file that cannot be parsed
(unbalanced braces), 77 skipped (not a git checkout), as ctest's SKIP_RETURN_CODE.
"""
import ast
import os
import re
import subprocess
import sys

MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80
MARKER = "// size:"
PY_MARKER = "# size:"
MARKER_WINDOW = 10  # the reason lines sit among a file's first lines
ROOTS = ("nazar", "cli", "apps", "python/src")  # C++ sources; Python: every tracked .py file


class ParseError(Exception):
    pass


def strip_code(text):
    """Text with comments, string/char literals and preprocessor lines blanked out (newlines kept,
    so line numbers stay). Literals keep their quotes so `""` stays a token."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":  # preprocessor line, with backslash continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append("\n")
                    i += 2
                    continue
                i += 1
            continue
        line_start = False
        if c == "\n":
            out.append(c)
            line_start = True
            i += 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch for ch in text[i:j] if ch == "\n") or " ")
            i = j
        elif c == "R" and i + 1 < n and text[i + 1] == '"' and not _ident_char(text, i - 1):
            m = re.match(r'R"([^()\\ ]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i + m.end())
            if end < 0:
                raise ParseError("unterminated raw string")
            j = end + len(m.group(1)) + 2
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c == '"' or (c == "'" and not _ident_char(text, i - 1)):
            j = i + 1
            while j < n and text[j] != c:
                if text[j] == "\\":
                    j += 1
                elif text[j] == "\n":
                    raise ParseError(f"unterminated literal on line {text.count(chr(10), 0, i) + 1}")
                j += 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _ident_char(text, i):
    return i >= 0 and (text[i].isalnum() or text[i] == "_")


def _matching(code, i, open_c, close_c):
    """Index of the bracket closing the one at code[i]."""
    depth = 0
    for j in range(i, len(code)):
        if code[j] == open_c:
            depth += 1
        elif code[j] == close_c:
            depth -= 1
            if depth == 0:
                return j
    raise ParseError(f"unbalanced '{open_c}' on line {code.count(chr(10), 0, i) + 1}")


def _strip_templates(head):
    """head without its leading `template <...>` clauses."""
    while True:
        m = re.match(r"\s*template\s*<", head)
        if not m:
            return head
        depth, j = 0, m.end() - 1
        while j < len(head):
            if head[j] == "<":
                depth += 1
            elif head[j] == ">":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        head = head[j + 1 :]


def _depth0(head):
    """head with the contents of () and [] removed (a rough view of its top level)."""
    out, depth = [], 0
    for ch in head:
        if ch in "([":
            if depth == 0:
                out.append(ch)
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth == 0:
                out.append(ch)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def classify(head):
    """'scope' (namespace, extern "C"), 'class', 'function' or 'data' for a `{` after head."""
    h = _strip_templates(head).strip()
    if re.match(r'(inline\s+)?namespace\b|extern\s*""', h):
        return "scope"
    h = re.sub(r"\boperator\s*(\(\)|\[\]|[^\s(]+)\s*\(", "operator_(", h)  # operator=, (), ...
    top = _depth0(h)
    if "(" not in top:
        if re.search(r"\b(class|struct|union|enum)\b", top) and "=" not in top:
            return "class"
        return "data"  # T x{...}, T x = {...}
    before_params = top[: top.index("(")]
    if "=" in before_params or re.search(r"\b(class|struct|union|enum)\b", before_params):
        # `auto f = [](...) {` (a lambda initializer), `struct S : B<f()> {` (rare): not checked
        return "class" if re.match(r"(class|struct|union|enum)\b", top) else "data"
    return "function"


def function_name(head):
    h = _strip_templates(head)
    h = re.sub(r"\boperator\s*\(\)\s*\(", "operator@call(", h)
    h = re.sub(r"\boperator\s*(\[\]|[^\s(]+)\s*\(", lambda m: "operator" + m.group(1) + "(", h)
    top = _depth0(h)
    m = re.search(r"([~\w:<>@]*(?:operator[^\s(]+)?)\s*\($", top[: top.index("(") + 1])
    name = m.group(1) if m and m.group(1) else top.strip().split("\n")[0][:60]
    return name.replace("@call", "()")


def functions(code):
    """(name, first line, body lines) of every function at namespace or class scope."""
    found = []
    line_of = lambda i: code.count("\n", 0, i) + 1  # noqa: E731

    def scan(start, end):
        head_start = start
        i = start
        while i < end:
            c = code[i]
            if c in ";}":
                head_start = i + 1
            elif c in "([":
                i = _matching(code, i, c, ")" if c == "(" else "]")
            elif c == "{":
                head = re.sub(r"^\s*((public|private|protected)\s*:(?!:)\s*)+", "",
                              code[head_start:i])
                close = _matching(code, i, "{", "}")
                kind = classify(head)
                if kind == "function" and _is_ctor_init_brace(head):
                    i = close + 1  # a member's brace initializer: the head goes on
                    continue
                if kind in ("scope", "class"):
                    scan(i + 1, close)
                elif kind == "function":
                    first = i - len(head) + len(head) - len(head.lstrip())
                    found.append((function_name(head), line_of(first),
                                  max(0, line_of(close) - line_of(i) - 1)))
                i = close
                head_start = close + 1
            i += 1

    scan(0, len(code))
    return found


def _is_ctor_init_brace(head):
    """`S::S(int x) : a_(x), b_{` — the `{` of a member's initializer, not the body."""
    top = _depth0(_strip_templates(head)).rstrip()
    return bool(re.search(r"\)\s*(noexcept\s*)?:[^:]", top)) and bool(re.search(r"[\w>]$", top))


def py_functions(text):
    """(name, first line, body lines) of every Python function at module or class scope."""
    found = []

    def scan(stmts, prefix):
        for node in stmts:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
                start = node.body[0].lineno
                body = node.end_lineno - start + 1 if start > node.lineno else 0  # `def f(): x` is 0
                found.append((prefix + node.name, first, body))
            elif isinstance(node, ast.ClassDef):
                scan(node.body, prefix + node.name + ".")
            else:  # if / try / with / for / while at module or class scope: their blocks
                for field in ("body", "orelse", "finalbody"):
                    scan(getattr(node, field, None) or [], prefix)
                for handler in getattr(node, "handlers", None) or []:
                    scan(handler.body, prefix)
                for case in getattr(node, "cases", None) or []:
                    scan(case.body, prefix)

    scan(ast.parse(text).body, "")
    return found


def check_file(path, text):
    problems = []
    lines = text.split("\n")
    n_lines = len(lines) - (1 if text.endswith("\n") else 0)
    python = path.endswith(".py")
    marker = PY_MARKER if python else MARKER
    reasons = [l.strip()[len(marker):] for l in lines[:MARKER_WINDOW] if l.strip().startswith(marker)]
    exempt = set(re.findall(r"([~\w]+)\(\)", " ".join(reasons)))
    if n_lines > MAX_FILE_LINES and not reasons:
        problems.append(f"{path}: {n_lines} lines (limit {MAX_FILE_LINES}; split it by job, or "
                        f"give a reason line '{marker} ...' at the top)")
    try:
        found = py_functions(text) if python else functions(strip_code(text))
        for name, line, body in found:
            if body > MAX_FUNCTION_LINES and re.split(r"::|\.", name)[-1] not in exempt:
                problems.append(f"{path}:{line}: function {name}: body of {body} lines "
                                f"(limit {MAX_FUNCTION_LINES})")
    except (ParseError, SyntaxError, ValueError) as e:
        problems.append(f"{path}: cannot find its functions: {e}")
    return problems, reasons


def self_test():
    """The checker on made-up sources with known answers (ctest lint.sizes_selftest)."""
    body = lambda n: "".join(f"    x += {i};\n" for i in range(n))  # noqa: E731
    cases = [  # (name, source, expected problems as (line or None, text fragment))
        ("81-line function", f"int f(int x) {{\n{body(81)}    return x;\n}}\n",
         [(1, "function f: body of 82 lines")]),
        ("80-line function", f"int f(int x) {{\n{body(79)}    return x;\n}}\n", []),
        ("class body long, members short",
         "struct S {\n" + "".join(f"    int g{i}() {{ return {i}; }}\n" for i in range(90)) + "};\n", []),
        ("inline member long",
         f"class C {{\npublic:\n    void m() const {{\n{body(81)}    }}\n}};\n",
         [(3, "function m: body of 81 lines")]),
        ("namespace-scope lambda is an initializer",
         f"namespace a {{\nconst auto l = [](int x) {{\n{body(90)}    return x;\n}};\n}}\n", []),
        ("data table", "const int t[] = {\n" + "".join(f"    {i},\n" for i in range(90)) + "};\n", []),
        ("constructor with brace initializers",
         f"S::S(int a) : a_{{a}}, b_(2), c_{{}} {{\n{body(81)}}}\n",
         [(1, "function S::S: body of 81 lines")]),
        ("braces in literals and comments",
         'void f() {\n    const char* s = "{{{";  // }}}\n    char c = \'{\';\n'
         '    int n = 1\'000;\n    auto r = R"x(}})x";\n    /* { */\n}\n'
         f"void g() {{\n{body(81)}}}\n", [(8, "function g: body of 81 lines")]),
        ("operator and template",
         f"template <class T>\nV<T>& V<T>::operator=(const V& o) {{\n{body(81)}}}\n",
         [(1, "function V<T>::operator=: body of 81 lines")]),
        ("file over 500 lines", "int x;\n" * 501, [(None, "501 lines (limit 500")]),
        ("reason lifts the file limit", "// size: a table (data)\n" + "int x;\n" * 501, []),
        ("reason names the functions it exempts",
         f"// size: f() is a table (data)\nint f() {{\n{body(81)}}}\nint g() {{\n{body(81)}}}\n",
         [(85, "function g: body of 81 lines")]),
    ]
    pybody = lambda n, ind="    ": "".join(f"{ind}x += {i}\n" for i in range(n))  # noqa: E731
    py_cases = [  # the same rules for Python (t.py)
        ("py: 81-line function", f"def f(x):\n{pybody(80)}    return x\n",
         [(1, "function f: body of 81 lines")]),
        ("py: 80-line function, docstring counted", f'def f(x):\n    """doc"""\n{pybody(79)}', []),
        ("py: multi-line signature, decorator",
         f"@dec\ndef f(a,\n      b):\n{pybody(81)}", [(1, "function f: body of 81 lines")]),
        ("py: class body long, methods short",
         "class C:\n" + "".join(f"    def g{i}(self):\n        return {i}\n" for i in range(90)), []),
        ("py: method long", f"class C:\n    def m(self):\n{pybody(81, '        ')}",
         [(2, "function C.m: body of 81 lines")]),
        ("py: nested functions are part of their function",
         f"def f():\n    def g():\n{pybody(50, '        ')}    def h():\n{pybody(50, '        ')}",
         [(1, "function f: body of 102 lines")]),
        ("py: function under a module-level if",
         f"if x:\n    def f():\n{pybody(81, '        ')}else:\n    f = None\n",
         [(2, "function f: body of 81 lines")]),
        ("py: one-line def", "def f(): return 1\n", []),
        ("py: file over 500 lines", "x = 1\n" * 501, [(None, "501 lines (limit 500")]),
        ("py: reason lifts the file limit and names f()",
         f"# size: a table (data); f() is one table\n{'x = 1' + chr(10)}def f():\n{pybody(81)}"
         + "x = 1\n" * 420 + f"def g():\n{pybody(81)}",
         [(505, "function g: body of 81 lines")]),
        ("py: syntax error", "def f(:\n", [(None, "cannot find its functions")]),
    ]
    failed = 0
    for name, src, want, path in [c + ("t.cpp",) for c in cases] + [c + ("t.py",) for c in py_cases]:
        got, _ = check_file(path, src)
        ok = len(got) == len(want) and all(
            frag in g and (line is None or g.startswith(f"{path}:{line}:"))
            for (line, frag), g in zip(want, got))
        if not ok:
            failed += 1
            print(f"check-sizes self-test FAILED: {name}: got {got}, want {want}")
    n = len(cases) + len(py_cases)
    print(f"check-sizes self-test: {n - failed}/{n} cases as expected")
    return 1 if failed else 0


def main(argv):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    os.chdir(root)
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) > 1:  # explicit files (for trying the checker on one file)
        files = argv[1:]
    else:
        try:
            ls = lambda *spec: subprocess.run(  # noqa: E731
                ["git", "ls-files", "-z", "--", *spec], check=True, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL).stdout.decode().split("\0")
            cpp, py = ls(*ROOTS), ls("*.py")
        except (OSError, subprocess.CalledProcessError):
            print(f"check-sizes: skipped, {os.getcwd()} is not a git checkout "
                  "(the checked files are git ls-files)")
            return 77
        files = [f for f in cpp if f.endswith((".h", ".cpp"))] + [f for f in py if f.endswith(".py")]
    files = [f for f in files if os.path.isfile(f)]  # deletions not yet committed
    problems, exempted = [], []
    for f in sorted(files):
        with open(f, encoding="utf-8") as fh:
            p, reasons = check_file(f, fh.read())
        problems += p
        exempted += [f"{f}: {r.strip()}" for r in reasons]
    for e in exempted:
        print(f"check-sizes: reason given: {e}")
    if problems:
        print(f"check-sizes: {len(problems)} over the limits:")
        for p in problems:
            print(f"  {p}")
        return 1
    print(f"check-sizes: {len(files)} files within {MAX_FILE_LINES} lines and functions within "
          f"{MAX_FUNCTION_LINES} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
