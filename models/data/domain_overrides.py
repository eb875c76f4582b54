"""What-ifs on the randomised domains for the scripts and benches that render them: command-line
options for the fields of :class:`linewatch.simulator.domain.DomainSpec` that are off or fixed in
the shipped domains, and applying them to every registered domain before the workers fork (they
read the same registry).

>>> import argparse
>>> parser = argparse.ArgumentParser()
>>> add_domain_arguments(parser)
>>> args = parser.parse_args(["--sensor-noise", "0.05", "3", "--cavitation-burst-floor", "0"])
>>> domain_changes(args)
{'sensor_noise': (0.05, 3.0), 'cavitation_burst_floor': 0.0}
>>> domain_changes(parser.parse_args([]))
{}
"""

from __future__ import annotations

import argparse
from dataclasses import replace


def add_domain_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of :func:`domain_changes` (each left out: the domains' own value)."""
    parser.add_argument("--winding-rise", type=float, nargs=2, default=None, metavar=("LO", "HI"),
                        help="draw the machines' winding rise at rated current (K) from this range instead of the "
                             "domains' (30 95; before 2026-12-05: 30 70)")
    parser.add_argument("--sensor-noise", type=float, nargs=2, default=None, metavar=("LO", "HI"),
                        help="each machine's PLC transmitters this much noisier or smoother (log-uniform per tag; "
                             "DomainSpec.sensor_noise, off in the shipped domains)")
    parser.add_argument("--vibration-noise", type=float, nargs=2, default=None, metavar=("LO", "HI"),
                        help="the vibration transmitter's noise factor range (the domains': 0.3 1.6)")
    parser.add_argument("--fan-still-share", type=float, nargs=2, default=None, metavar=("LO", "HI"),
                        help="motors cooled by their own shaft fan: the share of rated cooling each keeps with the fan "
                             "stopped, drawn per machine; a drive's motor then runs warmer at low speed "
                             "(DomainSpec.fan_still_share, off in the shipped domains)")
    parser.add_argument("--cavitation-burst-floor", type=float, default=None,
                        help="the least burstiness of a cavitating pump's vibration (the domains': 0.2)")


def domain_changes(args: argparse.Namespace) -> dict[str, object]:
    """The :class:`~linewatch.simulator.domain.DomainSpec` fields the options of
    :func:`add_domain_arguments` set."""
    changes: dict[str, object] = {}
    for option, field in (("winding_rise", "winding_rise_k"), ("sensor_noise", "sensor_noise"),
                          ("vibration_noise", "vibration_noise"), ("fan_still_share", "fan_still_share")):
        value = getattr(args, option, None)
        if value is not None:
            changes[field] = (float(value[0]), float(value[1]))
    if getattr(args, "cavitation_burst_floor", None) is not None:
        changes["cavitation_burst_floor"] = float(args.cavitation_burst_floor)
    return changes


def apply_domain_changes(args: argparse.Namespace) -> dict[str, object]:
    """Set :func:`domain_changes` on every registered domain (``linewatch.simulator.domain.DOMAINS``,
    a process-wide registry: call it once, at the start of a script, before its workers fork);
    returns the changes."""
    from linewatch.simulator.domain import DOMAINS

    changes = domain_changes(args)
    for name in list(DOMAINS) if changes else []:
        DOMAINS[name] = replace(DOMAINS[name], **changes)  # type: ignore[arg-type]
    return changes
