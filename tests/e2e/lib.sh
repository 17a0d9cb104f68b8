# The start that the e2e shell tests share; source it first: . "$(dirname "$0")/lib.sh" "$@"
#   NAZAR   the nazar program given as $1, as an absolute path (the tests change directory)
#   SRC     the repository
#   PY      /usr/bin/python3 (the tests' own Python needs the standard library only)
#   dir     a new temporary directory, removed at exit, made the current directory
#   fail    0; bad() sets it to 1 and the test ends with `exit $fail`
#   ok NAME, bad NAME [DETAIL...]: an "ok   NAME" line, or "FAIL NAME" and one line per detail
set -u
NAZAR=${1:?usage: $(basename "$0") path/to/nazar}
NAZAR=$(cd "$(dirname "$NAZAR")" && pwd)/$(basename "$NAZAR")
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
fail=0
ok() { echo "ok   $1"; }
bad() {
    echo "FAIL $1"
    shift
    for l in "$@"; do echo "  $l"; done
    fail=1
}
