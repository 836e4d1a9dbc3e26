#!/usr/bin/env python3
"""`iosim validate ARGS`, run once and shared by the checks that read it (issue 28).

The docs check (scripts/readme_tables.sh, scripts/readme_numbers.py) and the accuracy levels
(scripts/accuracy_levels.py --check-now) re-predict the same measured sets. Each asks run() for
`iosim validate ARGS`; run() returns its Markdown table and JSON report from one run (`--format md
--json FILE`), kept in the folder IOSIM_VALIDATED_DIR names, if set, under the hash of ARGS. ctest
sets that folder for one test run (CMakeLists.txt: the fixture `validated` empties it before and
removes it after), so a later build never reads an earlier one's results. ARGS are taken as given,
relative to the repository root, where iosim runs.

Usage: scripts/validated.py md IOSIM ARGS...   (prints the Markdown table)
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(iosim, args):
    """(Markdown table, JSON report as a dict) of `iosim validate ARGS`."""
    iosim = os.path.abspath(iosim) if os.sep in iosim else iosim  # (iosim runs in ROOT)
    folder = os.environ.get("IOSIM_VALIDATED_DIR")
    key = hashlib.sha1(" ".join(args).encode()).hexdigest()
    if folder:
        os.makedirs(folder, exist_ok=True)
        md_path, json_path = (os.path.join(folder, key + ext) for ext in (".md", ".json"))
        if os.path.exists(md_path) and os.path.exists(json_path):
            with open(md_path) as md, open(json_path) as js:
                return md.read(), json.load(js)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        kept = os.path.join(tmp, "report.json")
        p = subprocess.run([iosim, "validate", *args, "--format", "md", "--json", kept],
                           capture_output=True, text=True, cwd=ROOT)
        if p.returncode != 0:
            raise RuntimeError(f"'iosim validate {' '.join(args)}' exited {p.returncode}: "
                               f"{p.stderr.strip()}")
        with open(kept) as js:
            report = json.load(js)
        if folder:  # the JSON last: a reader that finds it finds the table too
            with open(os.path.join(tmp, "table.md"), "w") as md:
                md.write(p.stdout)
            os.replace(os.path.join(tmp, "table.md"), md_path)
            os.replace(kept, json_path)
    return p.stdout, report


def main(argv):
    if len(argv) < 4 or argv[1] != "md":
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    try:
        md, _ = run(argv[2], argv[3:])
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 1
    sys.stdout.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
