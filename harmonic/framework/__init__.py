"""The scheduling framework: extension points, statuses, cycle state, profiles and configuration.

Plugins see the cluster only through the ``Snapshot`` (numpy arrays over all nodes) and the
``Handle``; nothing here imports cluster adapters, the simulator, the extender or the CLI.
"""
