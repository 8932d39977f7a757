"""``git harn doctor``: everything git-harn could have left behind in a clone
and on its machine, what it costs, the one command that fixes each, and the
safe ones fixed on request.

Layer 6: may import any domain package below the commands (workflow/ and
sync/ for settling and staging refs, workspace/ for cleanup, store/ for
locks, leases and processes); nothing below imports it.
"""
