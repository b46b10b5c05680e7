"""man_options.py MANPAGE < HELP: prints each long option that the help text
lists and the man page does not mention (roff's \\- read as -)."""
import re
import sys

man = open(sys.argv[1], encoding="utf-8").read().replace("\\-", "-")
for opt in sorted(set(re.findall(r"^  (--[a-z0-9-]+)", sys.stdin.read(), re.M))):
    if opt not in man:
        print("%s lacks %s" % (sys.argv[1], opt))
