"""The command line's help (issue 30, item 11): every option of every sub-command,
those with a parser of their own included, says what it does; ``granular --version``
prints the package's version."""

import argparse
import subprocess
import sys

import pytest
from patience import PATIENCE

import granular
from granular import cli


def parsers(parser=None, prog=None):
    """``(prog, parser)`` of ``granular`` and of every sub-command, nested ones included;
    a sub-command that parses its own arguments (``granular ensemble``) by its own parser."""
    parser = parser or cli.build_parser()
    yield prog or parser.prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                own = cli.OWN_COMMANDS.get(name) if parser.prog == "granular" else None
                sub = own[1]() if own else sub
                yield from parsers(sub, f"{prog or parser.prog} {name}")


def test_every_option_of_every_command_has_help():
    seen, missing = set(), []
    for prog, parser in parsers():
        seen.add(prog)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:  # the line of each sub-command in `granular -h`
                    if not (choice.help or "").strip():
                        missing.append(f"{prog} {choice.dest}")
                continue
            if not (action.help or "").strip() or action.help == argparse.SUPPRESS:
                missing.append(f"{prog} {'/'.join(action.option_strings) or action.dest}")
    assert {"granular", "granular run", "granular ensemble", "granular bench", "granular validate",
            "granular info"} <= seen  # fmt: skip
    assert not missing, f"options without help: {', '.join(missing)}"


def test_commands_with_their_own_parser_are_walked_through_it():
    (sub,) = [a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    stubs = {name for name, p in sub.choices.items() if not [a for a in p._actions if a.option_strings or a.dest]}
    assert stubs == set(cli.OWN_COMMANDS)  # a listed-only sub-command has its parser here
    ensemble = dict(parsers())["granular ensemble"]
    assert {"--n", "--seed", "--steps", "--time", "--quiet", "--resume"} <= set(ensemble._option_string_actions)


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"granular {granular.__version__}\n"
    r = subprocess.run(
        [sys.executable, "-m", "granular", "--version"], capture_output=True, text=True, timeout=PATIENCE, check=False
    )
    assert r.returncode == 0 and r.stdout.strip() == f"granular {granular.__version__}"
