"""tests/docs_links_check.py — every relative link of README.md and docs/*.md resolves.

A link [text](path) or [text](path#anchor) or [text](#anchor) must name a file or
directory of the tree and, with an anchor, a heading of that markdown file (anchors as
GitHub makes them: lower case, punctuation but '-' and '_' dropped, spaces as '-').
Links with a scheme (https:, mailto:) are not checked. Run from anywhere; exits 1 with
one line per broken link.
"""
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))
LINK = re.compile(r"\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)\)")


def anchors(path):
    out, seen, fence = set(), {}, False
    for line in open(path, encoding="utf-8"):
        if line.lstrip().startswith("```"):
            fence = not fence
        if fence or not line.startswith("#"):
            continue
        text = line.lstrip("#").strip().lower()
        a = re.sub(r"[^\w\- ]", "", text.replace("`", "")).replace(" ", "-")
        n = seen.get(a, 0)
        seen[a] = n + 1
        out.add(a if n == 0 else "%s-%d" % (a, n))
    return out


def links(path):
    """(line, target) of each link outside code; a link's text may span lines."""
    kept, fence = [], False
    for line in open(path, encoding="utf-8"):
        if line.lstrip().startswith("```"):
            fence = not fence
            kept.append("\n")
        elif fence or line.startswith("    "):
            kept.append("\n")
        else:
            kept.append(line.replace("\\|", "|"))
    text = "".join(kept)
    for m in LINK.finditer(text):
        yield text.count("\n", 0, m.start(1)) + 1, m.group(1)


def main():
    files = ["README.md"] + sorted(
        os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    bad = 0
    for f in files:
        for no, target in links(os.path.join(ROOT, f)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(ROOT, os.path.dirname(f), path)) if path \
                else os.path.join(ROOT, f)
            if not os.path.exists(dest):
                print("%s:%d: %s: no such file" % (f, no, target))
                bad += 1
            elif anchor and (not dest.endswith(".md") or anchor not in anchors(dest)):
                print("%s:%d: %s: no such heading" % (f, no, target))
                bad += 1
    if bad:
        sys.exit(1)
    print("docs_links_check: %d files, every relative link resolves" % len(files))


if __name__ == "__main__":
    main()
