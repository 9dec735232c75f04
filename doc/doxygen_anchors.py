#!/usr/bin/env python3
"""Doxygen input filter for the Markdown pages (doc/Doxyfile): gives each heading the anchor
GitHub gives it, prefixed with the page's name because Doxygen's labels are global, and points
the page's own #links at those labels, so that the links work in both."""
import os
import re
import sys

path = sys.argv[1]
page = re.sub(r"[^\w]", "-", os.path.splitext(os.path.basename(path))[0].lower())
seen = {}


def label(slug):
    return "%s-%s" % (page, slug)


out = []
in_code = False
for line in open(path, encoding="utf-8"):
    if line.startswith("```"):
        in_code = not in_code
    heading = None if in_code else re.match(r"^(#{1,6}) (.*?)\s*$", line)
    if heading:
        slug = re.sub(r"[^\w\- ]", "", heading.group(2).lower()).replace(" ", "-")
        # GitHub numbers a page's repeated headings: x, x-1, x-2, ...
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        if count:
            slug = "%s-%d" % (slug, count)
        line = "%s %s {#%s}\n" % (heading.group(1), heading.group(2), label(slug))
    elif not in_code:
        line = re.sub(r"\]\(#([\w\-]+)\)", lambda m: "](#%s)" % label(m.group(1)), line)
    out.append(line)
sys.stdout.write("".join(out))
