"""`grade doctor`: what this machine gives the sandbox, and why the missing layers are missing."""

from __future__ import annotations

import click


@click.command("doctor")
@click.option("--require", type=click.Choice(["strict"]), default=None,
              help="Exit 1 unless learner code gets this isolation level here (for CI).")
def doctor(require: str | None) -> None:
    """Show which isolation layers are active for learner code on this machine."""
    from grader.sandbox import isolation

    caps = isolation.probe()
    click.echo("Isolation layers for learner code on this machine:")
    for layer in caps.layers:
        mark = click.style("✓", fg="green") if layer.active else click.style("✗", fg="red")
        click.echo(f"  {mark} {layer.name:<18} {layer.detail}")
    if caps.level == "strict":
        click.echo("Isolation level: strict — learner code cannot read the references, the "
                   "suites, reports or other submissions, has no network, no capabilities and "
                   "no process or file that outlives its worker.")
    else:
        click.echo(f"Isolation level: basic (missing: {', '.join(caps.missing())}) — learner "
                   "code runs in its own process with limits, but may read the filesystem, "
                   "reach the network or change what it can reach. Fine for learners on their "
                   "own code; teachers should grade a class with --isolation strict on a "
                   "machine that offers it.")
    if require == "strict" and caps.level != "strict":
        raise click.exceptions.Exit(1)
