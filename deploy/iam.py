"""The command line of the IAM policy generator: list the product's AWS actions, regenerate the
policies in the CloudFormation templates (--write), or check they are current (--check).

    python -m deploy.iam [--write | --check] [--root DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from deploy import iam_policy
from deploy.iam_actions import REGENERATE, ROOT, Walk, discover


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="regenerate the policies in the templates")
    mode.add_argument("--check", action="store_true", help="exit 1 when a template is out of date")
    parser.add_argument("--root", type=Path, default=ROOT, help="the source tree to walk (default: this repository)")
    args = parser.parse_args(argv)

    walk = discover(args.root)
    if walk.problems:
        print("The IAM action walk could not resolve:", *walk.problems, sep="\n  ", file=sys.stderr)
        return 1
    try:
        return _run(args, walk)
    except iam_policy.UnscopedAction as exc:
        print(exc, file=sys.stderr)
        return 1


def _run(args, walk: Walk) -> int:
    if args.write:
        for path in iam_policy.write_templates(walk.calls, args.root):
            print(f"updated {path.relative_to(ROOT)}")
        return 0
    if args.check:
        stale = iam_policy.stale_templates(walk.calls, args.root)
        for path, message in stale:
            print(f"{path.relative_to(ROOT)}: {message}", file=sys.stderr)
        if stale:
            print(f"Regenerate the policies with: {REGENERATE}", file=sys.stderr)
        return 1 if stale else 0
    for identity, actions in iam_policy.actions_by_identity(walk.calls).items():
        print(f"{identity}:")
        for action, wheres in actions.items():
            print(f"  {action:55} {', '.join(sorted(set(wheres))[:3])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
