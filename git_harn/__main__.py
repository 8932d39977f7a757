from git_harn.cli import main

main()
