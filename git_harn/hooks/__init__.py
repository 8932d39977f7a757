"""git hooks [H1]-[H3]: the files git-harn installs and chains, and what they
do once their shell filter lets Python start.

Layer 4: may import workspaces, the store, the git layer and the shared helpers.
"""
