#!/usr/bin/env bash
# Writes .corpus/kjv.txt: the King James Version (public domain) from Debian's bible-kjv package,
# one verse per line, verse numbers stripped, hard-wrapped lines joined, chapter headings dropped.
# Usage: tools/make_corpus.sh [out_file]   (default .corpus/kjv.txt, relative to the repo root)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-.corpus/kjv.txt}"
if ! command -v bible >/dev/null 2>&1; then
  echo "bible(1) not found: installing Debian's bible-kjv" >&2
  if [ "$(id -u)" = 0 ]; then apt-get install -y bible-kjv; else sudo apt-get install -y bible-kjv; fi
fi
mkdir -p "$(dirname "$out")"
# bible prints: a blank line, a heading "Book N", a blank line, then verses "  V text" whose
# continuation lines start at column 0.
bible Gen1:1-Rev22:21 | python3 -c '
import re, sys
verses, cur, prev_blank = [], None, True
for raw in sys.stdin.read().split("\n"):
    line = raw.rstrip()
    if not line:
        prev_blank = True
        continue
    m = re.match(r"^\s+(\d+) (.*)$", line)
    if m:
        if cur is not None:
            verses.append(cur)
        cur = m.group(2).strip()
    elif prev_blank:
        # chapter heading such as "Genesis 1" or "1 Samuel 3": dropped
        if cur is not None:
            verses.append(cur)
        cur = None
    else:
        cur = (cur + " " + line.strip()) if cur is not None else line.strip()
    prev_blank = False
if cur is not None:
    verses.append(cur)
text = "\n".join(re.sub(r"\s+", " ", v) for v in verses) + "\n"
text.encode("ascii")  # the KJV text of bible-kjv is plain ASCII; fail loudly otherwise
sys.stdout.write(text)
' > "$out.tmp"
mv "$out.tmp" "$out"
echo "$out: $(wc -l <"$out") verses, $(wc -c <"$out") bytes"
