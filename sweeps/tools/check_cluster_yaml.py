"""Check a Ray cluster launcher YAML: Ray's own validation plus this project's rules, offline;
with --connect, the machines of an on-prem file too.

    python -m sweeps.tools.check_cluster_yaml cluster.yaml cluster-local.yaml
    python -m sweeps.tools.check_cluster_yaml --strict cluster.yaml   # placeholders left = failure
    python -m sweeps.tools.check_cluster_yaml --connect cluster-local.yaml   # and its machines

--connect (provider: local, --strict implied) logs in to every machine with the file's SSH user
and key before anything is started there, and says in one line per problem, with its fix, what
would break a sweep: SSH, the key, Python and Ray, the shared directory, Ray's ports between the
machines, ... (sweeps/tools/cluster_preflight.py lists them). Exit 0 only when a sweep can run.

`ray up` validates only after it has AWS credentials and starts spending money; this runs the
same code (`prepare_config` fills Ray's provider defaults, `validate_config` applies
ray-schema.json and the node-type rules) with no network. Two mistakes Ray accepts silently
are errors here: a node type with min_workers > max_workers (the autoscaler quietly uses
the smaller number) and an AWS provider without a region (`ray up` fails with a KeyError).
"""

from __future__ import annotations

import argparse
import copy
import logging
import pathlib
import sys
import time

import yaml

from sbfn_dist.errors import SbfnError
from sbfn_dist.interfaces.usage import HelpFormatter
from sweeps.tools.cluster_preflight import preflight

# Values in the shipped examples that a user must replace, and what with.
PLACEHOLDERS = {
    "your-sbfn-bucket": "an S3 bucket you own",
    "123456789012": "your AWS account id",
    "192.0.2.": "your machines' addresses (192.0.2.0/24 is a documentation range)",
    "YOUR_": "your own value",
}


class ClusterConfigError(SbfnError):
    """A cluster YAML that `ray up` would reject or silently misread."""


def load_config(path: str | pathlib.Path) -> dict:
    """The YAML file as a dict; a clear error when it is missing or not a mapping."""
    path = pathlib.Path(path)
    try:
        config = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ClusterConfigError(f"{path}: no such file; pass the path of a cluster YAML") from None
    except yaml.YAMLError as exc:
        raise ClusterConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(config, dict):
        raise ClusterConfigError(f"{path}: the top level must be a mapping of cluster-config keys")
    return config


def _key_path(parts) -> str:
    return ".".join(str(p) for p in parts) or "(top level)"


def ray_validate(config: dict) -> dict:
    """Run Ray's prepare_config + validate_config on a copy; return the prepared config."""
    import click
    import jsonschema
    from ray.autoscaler._private.util import prepare_config, validate_config

    # prepare_config logs its defaulting at INFO ("setting max workers ..."): noise here.
    logging.getLogger("ray.autoscaler._private.util").setLevel(logging.WARNING)
    try:
        prepared = prepare_config(copy.deepcopy(config))
        validate_config(prepared)
    except jsonschema.ValidationError as exc:
        raise ClusterConfigError(
            f"Ray's schema rejects key {_key_path(exc.absolute_path)}: {exc.message}"
        ) from None
    except KeyError as exc:
        raise ClusterConfigError(f"required key {exc} is missing") from None
    except (ValueError, RuntimeError, click.ClickException) as exc:
        raise ClusterConfigError(f"Ray rejects the config: {exc}") from None
    return prepared


def _check_aws_provider(provider: dict) -> None:
    region = provider.get("region")
    if not region:
        raise ClusterConfigError(
            "provider.region is missing: the AWS provider needs a region such as us-east-1"
        )
    zones = [z.strip() for z in str(provider.get("availability_zone", "")).split(",") if z.strip()]
    foreign = [z for z in zones if not z.startswith(region)]
    if foreign:
        raise ClusterConfigError(
            f"provider.availability_zone lists {foreign}, which are not in region {region}"
        )


def _check_worker_bounds(config: dict) -> None:
    for name, node_type in config.get("available_node_types", {}).items():
        low, high = node_type.get("min_workers"), node_type.get("max_workers")
        if low is not None and high is not None and low > high:
            raise ClusterConfigError(
                f"available_node_types.{name}: min_workers {low} > max_workers {high}; "
                "Ray would silently start only max_workers. Lower min_workers or raise max_workers"
            )


def project_checks(config: dict) -> None:
    """Rules Ray's validation does not enforce but `ray up` or the autoscaler depend on."""
    provider = config.get("provider", {})
    if provider.get("type") == "aws":
        _check_aws_provider(provider)
    _check_worker_bounds(config)


def _strings(node, path=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _strings(value, path + (i,))
    elif isinstance(node, str):
        yield path, node


def placeholders(config: dict) -> list[str]:
    """One line per value that still holds a shipped placeholder."""
    found = []
    for path, text in _strings(config):
        for token, meaning in PLACEHOLDERS.items():
            if token in text:
                found.append(f"{_key_path(path)}: '{token}' -> {meaning}")
    return found


def _summary(prepared: dict) -> str:
    provider = prepared["provider"]
    if provider["type"] == "local":
        return f"provider local, head {provider['head_ip']}, {len(provider['worker_ips'])} worker_ips"
    head = prepared["head_node_type"]
    workers = ", ".join(
        f"{name} {spec['min_workers']}-{spec['max_workers']}"
        for name, spec in prepared["available_node_types"].items()
        if name != head
    )
    return f"provider {provider['type']}, head {head}, workers {workers}, max_workers {prepared['max_workers']}"


def check(path: str | pathlib.Path) -> tuple[str, list[str]]:
    """Validate one file: (summary, placeholder notes); raises ClusterConfigError."""
    config = load_config(path)
    prepared = ray_validate(config)
    project_checks(config)
    return _summary(prepared), placeholders(config)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sweeps.tools.check_cluster_yaml",
                                     description=__doc__.split("\n\n")[0],
                                     formatter_class=HelpFormatter, allow_abbrev=False)
    parser.add_argument("paths", nargs="+", help="cluster YAML files, e.g. cluster.yaml")
    parser.add_argument("--strict", action="store_true", help="fail while placeholders are left")
    parser.add_argument("--connect", action="store_true",
                        help="log in to the machines of an on-prem file (provider: local) and "
                             "check what a sweep needs there (implies --strict)")
    args = parser.parse_args(argv)
    results = [_check_file(path, args.strict or args.connect, args.connect)
               for path in args.paths]
    return 0 if all(results) else 1


def _check_file(path: str, strict: bool, connect: bool) -> bool:
    """One file checked and its verdict printed; whether it passed."""
    import ray
    try:
        summary, notes = check(path)
    except ClusterConfigError as exc:
        print(f"{path}: FAILED: {exc}")
        return False
    passed = not (notes and strict)
    if passed:
        print(f"{path}: OK with Ray {ray.__version__}'s validation ({summary})")
    else:                               # the verdict the exit status gives, in words
        print(f"{path}: FAILED (--strict): {len(notes)} placeholder values left, though "
              f"Ray {ray.__version__}'s validation passes ({summary})")
    for note in notes:
        print(f"  replace before `ray up`: {note}")
    return passed and (_connect(path) if connect else True)


def _connect(path: str) -> bool:
    """--connect: the machines checked (cluster_preflight), a line per problem, the verdict."""
    config = load_config(path)
    if config.get("provider", {}).get("type") != "local":
        print(f"{path}: --connect FAILED: it checks machines you have (provider: local); "
              "`ray up` makes this file's machines")
        return False
    start = time.monotonic()
    findings, summary = preflight(config)
    for finding in findings:
        print(finding.line())
    problems = [f for f in findings if f.fatal]
    took = f"{time.monotonic() - start:.1f} s"
    if problems:
        print(f"{path}: --connect FAILED: {len(problems)} problem(s) above, each with its fix "
              f"({summary}; {took})")
        return False
    print(f"{path}: --connect OK: a sweep can run ({summary}; {took})")
    return True


if __name__ == "__main__":
    sys.exit(main())
