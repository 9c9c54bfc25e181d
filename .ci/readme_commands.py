"""Print the README's commands that CI runs as written: `quick` (the two quick-start lines) or
`slow` (the slow-test command). Each is the first ```bash block after its marker, a phrase that
the README keeps on one line; the marker is looked for with line breaks folded to spaces, so that
rewrapping the README's prose cannot hide it."""

import re
import sys
from pathlib import Path

MARKERS = {"quick": "## Quick start", "slow": "The slow ones are a second command"}


def readme_block(text: str, marker: str) -> str:
    """The body of the first ```bash block after `marker` (whitespace runs match any spacing)."""
    pattern = r"\s+".join(map(re.escape, marker.split()))
    found = re.search(pattern, text)
    if found is None:
        raise SystemExit(f"the README has no {marker!r}")
    block = re.search(r"^```bash\n(.*?)^```", text[found.end():], re.S | re.M)
    if block is None:
        raise SystemExit(f"the README has no ```bash block after {marker!r}")
    return block.group(1).rstrip("\n")


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in MARKERS:
        raise SystemExit("usage: readme_commands.py quick|slow")
    readme = Path(__file__).resolve().parent.parent / "README.md"
    print(readme_block(readme.read_text(encoding="utf-8"), MARKERS[sys.argv[1]]))
