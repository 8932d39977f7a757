"""``git harn sync``: run records, workflow records, notes (and, when asked,
salvage branches) shared among clones through any git remote, never forced and
never deleting a remote ref [S1].

Layer 5 (beside the workflow): may import the domain packages below it
(integrate, assess, hooks, tasks, workspace), the store, the git layer and the
shared helpers at the top of the package; never pygit2, never a git process of
its own (the remote is ``git_harn.git.remote``, the chains ``git_harn.store.chain``),
never click.
"""
