"""Coscheduling (gang scheduling with PodGroups), as scheduler-plugins defines it; see ``plugin.py``."""

from harmonic.plugins.coscheduling.args import CoschedulingArgs
from harmonic.plugins.coscheduling.plugin import Coscheduling

__all__ = ["Coscheduling", "CoschedulingArgs"]
