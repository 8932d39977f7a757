"""What the tests share: real repositories, scripted and fake agents, readers of what git-harn wrote."""
