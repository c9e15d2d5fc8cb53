"""``python -m tools.teaching.grader SUBMISSIONS``: the grader's command (``cli``)."""

import sys

from tools.teaching.grader.cli import main

sys.exit(main())
