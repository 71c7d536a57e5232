"""Rewrite the README's column dictionary from llmsweep/columns.py (tests/test_docs.py checks it).

python scripts/update_readme_columns.py
"""

from pathlib import Path

from llmsweep.columns import markdown_dictionary

README = Path(__file__).resolve().parent.parent / "README.md"
START, END = "<!-- columns:start -->\n", "\n<!-- columns:end -->"

text = README.read_text()
head, rest = text.split(START)
_, tail = rest.split(END)
README.write_text(head + START + markdown_dictionary() + END + tail)
print(f"updated {README}")
