"""The store: git-harn's own state in the repository (run records, notes) and
its locks beside it.

Layer 2: may import the git layer (``git_harn.git``) and the shared helpers at
the top of the package, nothing above.
"""
