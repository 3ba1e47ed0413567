"""models: the chat models ragcli can use (profiles, GGUF files on this machine, servers), and
`models pull`: a model of the catalogue (or any GGUF of the Hugging Face Hub) fetched in one command."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from ragcli.cli.common import JsonOpt, app, console, handle_errors, info

# The library is imported inside the commands: `ragcli --help` imports every cli module and loads none of it.

models_app = typer.Typer(help="Chat models: the ones found and configured (`ragcli models`), and "
                              "`ragcli models pull` to fetch one.")
app.add_typer(models_app, name="models")


@models_app.callback(invoke_without_command=True)
@handle_errors
def models_cmd(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """Configured profiles, GGUF files found (Ollama, LM Studio, Hugging Face cache, ~/models) and what
    reachable servers serve; the model `ask` would use is marked. `ragcli models pull` fetches one."""
    if ctx.invoked_subcommand is not None:
        return
    from ragcli import config
    from ragcli.models.discovery import catalog
    from ragcli.render import models as render
    from ragcli.render.data import models_data, print_json

    data = catalog(config.model_settings(), config.profiles())
    if json_out:
        print_json(models_data(data))
    else:
        render.print_models(console(), data)


@models_app.command("pull")
@handle_errors
def pull_cmd(
    spec: Annotated[Optional[str], typer.Argument(
        metavar="NAME | REPO[/FILE] | URL", show_default=False,
        help="A catalogue name (`ragcli models pull` lists them), a Hugging Face repository (ORG/NAME, its "
             "one Q4_K_M GGUF), REPO/FILE.gguf, or a https://.../ORG/NAME/resolve/REVISION/FILE.gguf URL.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Without a NAME: pull the largest catalogue model "
                                      "that fits this machine's memory.")] = False,
    sha256: Annotated[Optional[str], typer.Option("--sha256", metavar="HEX", help="The file's expected sha256 "
                                                  "(checked before it is used); without it a URL's file gets "
                                                  "its sha256 computed and shown.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Download a GGUF chat model into the Hugging Face cache: resumed when interrupted, its sha256
    checked, and made the default model when none is configured yet. Without a NAME: the catalogue,
    the models that fit this machine marked."""
    from ragcli import config
    from ragcli.models import download, hardware
    from ragcli.render.data import print_json
    from ragcli.render.download import PullProgress, catalog_table, pulled_line

    if spec is None:
        hw = hardware.detect()
        entries = download.entries(hw)
        if not yes:
            if json_out:
                print_json({"memory_total": hw.memory_total, "physical_cores": hw.physical_cores,
                            "gpu_offload": hw.gpu_offload, "models": entries})
            else:
                console().print(catalog_table(entries, hw))
                info("pull one: ragcli models pull NAME (or --yes for the largest that fits)")
            return
        best = download.largest_fit(entries)
        if best is None:
            from ragcli.errors import NotFoundError

            raise NotFoundError(f"no catalogue model fits in {hw.memory_total / 1e9:.1f} GB of memory")
        spec = best.name
        if not json_out:
            info(f"pulling {best.name} ({best.title}, {best.size_gb:.2f} GB), the largest that fits")
    target = download.target(spec, sha256)
    label = target.name or (f"{target.repo}/{target.file}" if target.file else target.repo)
    with PullProgress(label, json_out) as report:
        pulled = download.pull(target, report)
    made_default = None
    if not config.model_configured():
        made_default = str(config.set_default_model(pulled.path))
    if json_out:
        print_json({**pulled.__dict__, "default": made_default is not None, "config": made_default})
    else:
        info(pulled_line(pulled, made_default))
