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
ray-schema.json and the node-type rules) with no network. Mistakes Ray accepts silently are
errors here: a node type with min_workers > max_workers (the autoscaler quietly uses the
smaller number), an AWS provider without a region (`ray up` fails with a KeyError), no
auth.ssh_user (`ray up` fails on it), and in an on-prem file an address that is none, the
head listed as a worker (its worker start command runs `ray stop` on the head), a worker
listed twice, or a key file SSH cannot use.
"""

from __future__ import annotations

from sweeps.engine.run.interruption import one_line_on_interrupt

one_line_on_interrupt(__name__)     # before the imports below: they take seconds

import argparse
import copy
import ipaddress
import logging
import os
import pathlib
import re
import sys
import time

import yaml

from sbfn_dist.errors import Parser, SbfnError
from sbfn_dist.interfaces.usage import HelpFormatter
from sweeps.engine.common.yaml_text import load_error
from sweeps.tools.cluster_preflight import key_file_problem, preflight

# Values in the shipped examples that a user must replace, and what with.
PLACEHOLDERS = {
    "your-sbfn-bucket": "an S3 bucket you own",
    "123456789012": "your AWS account id",
    "192.0.2.": "your machines' addresses (192.0.2.0/24 is a documentation range)",
    "YOUR_": "your own value",
}
# The providers whose machines `ray up` and the autoscaler reach over SSH (auth.ssh_user)
SSH_PROVIDERS = ("local", "aws", "gcp", "azure")
# A host name as DNS takes one (RFC 1123): labels of letters, digits and inner hyphens
HOST_NAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                       r"(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$")


class ClusterConfigError(SbfnError):
    """A cluster YAML that `ray up` would reject or silently misread."""


def load_config(path: str | pathlib.Path) -> dict:
    """The YAML file as a dict; a clear error when it is missing, a folder, not text or not a
    mapping; the bytes as YAML reads them (sweeps/engine/common/yaml_text.py)."""
    path = pathlib.Path(path)
    try:
        config = yaml.safe_load(path.read_bytes())
    except FileNotFoundError:
        raise ClusterConfigError(f"{path}: no such file; pass the path of a cluster YAML") from None
    except IsADirectoryError:
        raise ClusterConfigError(f"{path}: a folder, not a file; pass the path of a cluster "
                                 "YAML (e.g. cluster-local.yaml)") from None
    except OSError as exc:
        raise ClusterConfigError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        raise ClusterConfigError(f"{path}: {load_error(exc)}") from None
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


def project_checks(config: dict, key: bool = True) -> None:
    """Rules Ray's validation does not enforce but `ray up` or the autoscaler depend on; `key`:
    the SSH key's file too (--connect asks it itself, first, among its own findings)."""
    provider = config.get("provider", {})
    if provider.get("type") == "aws":
        _check_aws_provider(provider)
    _check_worker_bounds(config)
    _check_ssh_user(config)
    if key:
        _check_key(config)


def machine_checks(config: dict) -> None:
    """An on-prem file's machines (provider: local), checked before Ray's validation, whose
    own words on a head listed as a worker speak of max_workers."""
    provider = config.get("provider")
    if not isinstance(provider, dict) or provider.get("type") != "local":
        return
    workers = provider.get("worker_ips") or []
    if not isinstance(workers, list):
        return                          # Ray's schema says what it must be
    _check_address("provider.head_ip", provider.get("head_ip"))
    for i, worker in enumerate(workers):
        _check_address(f"provider.worker_ips[{i}]", worker)
    _check_head_not_a_worker(provider.get("head_ip"), workers)
    _check_each_worker_once(workers)


def _check_address(key: str, value) -> None:
    """An IP address or a host name (`ray up` SSHes to it; the workers' Ray joins the head's)."""
    if value is None:
        return                          # the head's: Ray says it is missing
    text = str(value).strip()
    try:
        ipaddress.ip_address(text)
        return
    except ValueError:
        if HOST_NAME.match(text) and not re.fullmatch(r"[\d.]+", text):   # 10.0.0.300: no name
            return
    raise ClusterConfigError(f"{key} {value!r} is neither an IP address nor a host name: write "
                             "the machine's address (e.g. 192.0.2.10) or its name")


def _check_head_not_a_worker(head, workers: list) -> None:
    if head is not None and str(head).strip() in (str(w).strip() for w in workers):
        raise ClusterConfigError(
            f"provider.worker_ips lists the head {head} (head_ip): its worker start command "
            "would run `ray stop` on the head and take the cluster down; list only the other "
            "machines")


def _check_each_worker_once(workers: list) -> None:
    seen = set()
    for worker in (str(w).strip() for w in workers):
        if worker in seen:
            raise ClusterConfigError(f"provider.worker_ips lists {worker} twice: one machine is "
                                     "one worker; give each once")
        seen.add(worker)


def _check_ssh_user(config: dict) -> None:
    """`ray up` logs in to the machines as auth.ssh_user; without it, it fails once it has
    started (an AWS cluster: once it has started paying for the head)."""
    auth = config.get("auth") or {}
    if config.get("provider", {}).get("type") in SSH_PROVIDERS and not auth.get("ssh_user"):
        raise ClusterConfigError(
            "auth.ssh_user is missing: `ray up` logs in to every machine as this user; set it "
            "to the account that reaches them by SSH (ubuntu on the Deep Learning AMI)")


def _check_key(config: dict) -> None:
    """auth.ssh_private_key as SSH would take it on this machine, where `ray up` runs
    (cluster_preflight.key_file_problem, which --connect asks first too). A file with
    placeholders left is an example: the key it names is one a user may not have made yet,
    and the placeholders are what it is told first."""
    key = (config.get("auth") or {}).get("ssh_private_key")
    if not key or placeholders(config):
        return
    problem = key_file_problem(os.path.expanduser(str(key)),
                               config["auth"].get("ssh_user") or "USER")
    if problem:
        raise ClusterConfigError(f"auth.ssh_private_key: {problem}")



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


def check(path: str | pathlib.Path, key: bool = True) -> tuple[str, list[str]]:
    """Validate one file: (summary, placeholder notes); raises ClusterConfigError. `key`:
    project_checks'."""
    config = load_config(path)
    machine_checks(config)
    prepared = ray_validate(config)
    project_checks(config, key)
    return _summary(prepared), placeholders(config)


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m sweeps.tools.check_cluster_yaml",
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
        summary, notes = check(path, key=not connect)
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
