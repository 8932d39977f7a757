"""``git harn completion bash|zsh|fish``: a script that plugs into git's own
completion (it never registers one of its own for ``git``).

The words come from the click commands themselves, written into the script
when it is printed, so pressing Tab starts no Python: run ids and task
branches are read with ``git for-each-ref`` by the shell. This is the click
layer describing itself, so there is no domain function to call.
"""

from __future__ import annotations

import importlib

import click

from git_harn.commands import COMMANDS

SHELLS = ("bash", "zsh", "fish")
# What a command's positional argument names, for the shell to offer.
RUN_IDS = ("run", "status", "cleanup", "reclaim", "log")
TASKS = ("assess", "gates run", "salvage-artefacts", "integrate")
TOP_OPTIONS = ("--version", "--help")


def _load(name: str) -> click.Command:
    module, attribute = COMMANDS[name]
    command: click.Command = getattr(importlib.import_module(f"git_harn.commands.{module}"), attribute)
    return command


def _paths() -> dict[str, click.Command]:
    """Command path ("hooks install") -> command, for every command and group."""
    found: dict[str, click.Command] = {}
    for name in COMMANDS:
        command = completion if name == "completion" else _load(name)
        found[name] = command
        if isinstance(command, click.Group):
            for sub, child in command.commands.items():
                if not child.hidden:
                    found[f"{name} {sub}"] = child
    return found


def _options(command: click.Command) -> list[str]:
    names = [o for p in command.params if isinstance(p, click.Option) for o in [*p.opts, *p.secondary_opts]]
    return sorted({n for n in names if n.startswith("--")} | {"--help"})


def _case(rows: dict[str, str]) -> str:
    """A POSIX ``case`` on "$1" printing the words of each command path."""
    arms = "".join(f'\t"{key}") echo "{value}" ;;\n' for key, value in rows.items())
    return f'\tcase "$1" in\n{arms}\tesac\n'


def _tables() -> str:
    paths = _paths()
    subs = {"": " ".join(COMMANDS)}
    subs.update({p: " ".join(n for n, sub in c.commands.items() if not sub.hidden)
                 for p, c in paths.items() if isinstance(c, click.Group)})
    opts = {"": " ".join(TOP_OPTIONS), **{p: " ".join(_options(c)) for p, c in paths.items()}}
    kinds = {**dict.fromkeys(RUN_IDS, "runs"), **dict.fromkeys(TASKS, "tasks"), "completion": "shells"}
    return (f"_git_harn_sub () {{\n{_case(subs)}}}\n_git_harn_opts () {{\n{_case(opts)}}}\n"
            f"_git_harn_arg () {{\n{_case(kinds)}}}\n")


BASH = r"""# git harn completion for bash. It plugs into git's own completion, which
# calls _git_harn for `git harn ...`. In ~/.bashrc, after git's completion:
#     eval "$(git harn completion bash)"
{tables}
_git_harn ()
{{
	local path="" i w
	for ((i = ${{__git_cmd_idx:-1}} + 1; i < cword; i++)); do
		w="${{words[i]}}"
		[ "$w" = "--" ] && return
		case "$w" in -*) continue ;; esac
		case " $(_git_harn_sub "$path") " in *" $w "*) path="${{path:+$path }}$w" ;; esac
	done
	case "$prev" in
	--base) __git_complete_refs; return ;;
	--path|--limit|--last|--timeout|--task|--assessor|--max-attempts) return ;;
	--remote) __gitcomp_nl "$(__git_remotes)"; return ;;
	esac
	case "$cur" in
	-*) __gitcomp "$(_git_harn_opts "$path")"; return ;;
	esac
	local subs="$(_git_harn_sub "$path")"
	if [ -n "$subs" ]; then __gitcomp "$subs"; return; fi
	case "$(_git_harn_arg "$path")" in
	runs) __gitcomp_nl "$(__git for-each-ref --format='%(refname:strip=3)' refs/harnery/runs/)" ;;
	tasks) __gitcomp_nl "$(__git for-each-ref --format='%(refname:strip=2)' 'refs/heads/roadmap-*')" ;;
	shells) __gitcomp "bash zsh fish" ;;
	esac
}}
"""

ZSH = r"""#compdef git-harn
# git harn completion for zsh. zsh's own git completion (_git) calls
# _git-harn for `git harn ...`. In ~/.zshrc, after compinit:
#     eval "$(git harn completion zsh)"
{tables}
_git-harn () {{
	local p="" w i
	local -a subs
	for (( i = 2; i < CURRENT; i++ )); do
		w=$words[i]
		[[ $w == -- ]] && return 1
		[[ $w == -* ]] && continue
		subs=(${{=$(_git_harn_sub "$p")}})
		(( ${{subs[(Ie)$w]}} )) && p="${{p:+$p }}$w"
	done
	case $words[CURRENT-1] in
	--base)
		compadd -- ${{(f)"$(git for-each-ref --format='%(refname:short)' refs/heads refs/remotes 2>/dev/null)"}}
		return ;;
	--path) _files; return ;;
	--remote) compadd -- ${{(f)"$(git remote 2>/dev/null)"}}; return ;;
	esac
	if [[ $PREFIX == -* ]]; then compadd -- ${{=$(_git_harn_opts "$p")}}; return; fi
	subs=(${{=$(_git_harn_sub "$p")}})
	if (( $#subs )); then compadd -- $subs; return; fi
	case "$(_git_harn_arg "$p")" in
	runs) compadd -- ${{(f)"$(git for-each-ref --format='%(refname:strip=3)' refs/harnery/runs/ 2>/dev/null)"}} ;;
	tasks) compadd -- ${{(f)"$(git for-each-ref --format='%(refname:strip=2)' 'refs/heads/roadmap-*' 2>/dev/null)"}} ;;
	shells) compadd bash zsh fish ;;
	esac
}}
compdef _git-harn git-harn
"""

FISH = r"""# git harn completion for fish. fish's git completion hands `git harn ...`
# to the completions of git-harn. In ~/.config/fish/config.fish:
#     git harn completion fish | source
function __git_harn_table
	set -l table $argv[1]
	set -l key $argv[2]
	sh -c '{tables}
"$0" "$1"' _git_harn_$table "$key" 2>/dev/null
end

function __git_harn_complete
	set -l tokens (commandline -opc)
	set -l cur (commandline -ct)
	set -l p ''
	set -l seen 0
	for t in $tokens
		if test $seen = 0
			contains -- $t harn git-harn; and set seen 1
			continue
		end
		test "$t" = '--'; and return
		string match -q -- '-*' $t; and continue
		if contains -- $t (string split ' ' (__git_harn_table sub "$p"))
			set p (string trim "$p $t")
		end
	end
	switch "$tokens[-1]"
		case --base
			git for-each-ref --format='%(refname:short)' refs/heads refs/remotes 2>/dev/null
			return
		case --remote
			git remote 2>/dev/null
			return
	end
	if string match -q -- '-*' $cur
		string split ' ' (__git_harn_table opts "$p")
		return
	end
	set -l subs (__git_harn_table sub "$p")
	if test -n "$subs"
		string split ' ' $subs
		return
	end
	switch (__git_harn_table arg "$p")
		case runs
			git for-each-ref --format='%(refname:strip=3)' refs/harnery/runs/ 2>/dev/null
		case tasks
			git for-each-ref --format='%(refname:strip=2)' 'refs/heads/roadmap-*' 2>/dev/null
		case shells
			printf '%s\n' bash zsh fish
	end
end

complete -c git-harn -f -a '(__git_harn_complete)'
complete -c git -n '__fish_seen_subcommand_from harn' -f -a '(__git_harn_complete)'
"""


@click.command()
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> int:
    """Print the completion script for SHELL (bash, zsh or fish).

    It plugs into git's own completion of `git harn ...`. Add to the rc file:
    bash: eval "$(git harn completion bash)"; zsh: eval "$(git harn
    completion zsh)"; fish: git harn completion fish | source.
    """
    tables = _tables()
    if shell == "fish":
        tables = tables.replace("'", "'\\''")
    template = {"bash": BASH, "zsh": ZSH, "fish": FISH}[shell]
    click.echo(template.format(tables=tables), nl=False)
    return 0
