#!/usr/bin/python3
"""Checks a copyright file against Debian's machine-readable format 1.0
with python3-debian's parser (strict: a malformed file raises), then what
the parser does not: every Files paragraph names its copyright and licence,
and every licence it names has a stand-alone License paragraph.
Prints one line per problem; exits 1 on any.
  usage: dep5check.py COPYRIGHT"""
import re
import sys

from debian.copyright import Copyright, FilesParagraph, LicenseParagraph

with open(sys.argv[1], encoding="utf-8") as f:
    c = Copyright(f, strict=True)
problems = []
if c.header.upstream_name != "jobscope":
    problems.append(f"Upstream-Name is {c.header.upstream_name!r}")
named, defined = {}, set()
for p in c.all_paragraphs():
    if isinstance(p, FilesParagraph):
        files = " ".join(p.files)
        if not (p.copyright or "").strip():
            problems.append(f"Files: {files}: no Copyright")
        if p.license is None:
            problems.append(f"Files: {files}: no License")
            continue
        for name in re.split(r"\s+(?:and|or)\s+", p.license.synopsis):
            named.setdefault(name.strip(), files)
    elif isinstance(p, LicenseParagraph):
        defined.add(p.license.synopsis)
for name, files in named.items():
    if name not in defined:
        problems.append(f"{name} (Files: {files}) has no stand-alone License paragraph")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
