"""git-harn's tests: folders mirror git_harn/'s, the shared pieces are in kit/."""
