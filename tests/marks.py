"""Marks shared by several test files."""

import pytest

#: For tests that call an objective themselves with random margins: its first call on a training
#: set whose margins are not at one base score warns, as a continued training's does.
RANDOM_MARGINS = pytest.mark.filterwarnings("ignore:the PL-Rank objective's first call")
