"""Where this icebench checkout is: the code finds its compose/ files and its git commit from here."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]  # harness/base/checkout.py -> the repository
