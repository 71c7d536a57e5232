"""Rewrite the README's column dictionary from llmsweep/columns.py (tests/test_docs.py checks it).

python scripts/update_readme_columns.py
"""

from pathlib import Path

from llmsweep.columns import markdown_dictionary, options_dictionary

README = Path(__file__).resolve().parent.parent / "README.md"
START, END = "<!-- columns:start -->\n", "\n<!-- columns:end -->"


def replace(text: str, start: str, end: str, block: str) -> str:
    head, rest = text.split(start)
    _, tail = rest.split(end)
    return head + start + block + end + tail


text = replace(README.read_text(), START, END, markdown_dictionary())
text = replace(text, "<!-- options:start -->\n", "\n<!-- options:end -->", options_dictionary())
README.write_text(text)
print(f"updated {README}")
