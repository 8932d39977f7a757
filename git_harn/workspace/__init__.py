"""Workspaces [W1]-[W8]: start, run, cleanup, reclaim and salvage, reconcile,
status and log. One module per verb of the lifecycle.

Layer 3: may import the store, the git layer and the shared helpers.
"""
