"""models: the chat models ragcli can use, by name (profiles, GGUF files on this machine, servers);
`models default NAME`, `models add FILE`, and `models pull`: a model of the catalogue (or any GGUF)
fetched in one command."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ragcli.cli.common import JsonOpt, VerboseOpt, app, console, handle_errors, info

# The library is imported inside the commands: `ragcli --help` imports every cli module and loads none of it.

models_app = typer.Typer(rich_markup_mode=None, help="Chat models by name: the ones on this machine (`ragcli models`), "
                              "`models default NAME`, `models add FILE`, and `models pull` to fetch one.")
app.add_typer(models_app, name="models")


@models_app.callback(invoke_without_command=True)
@handle_errors
def models_cmd(ctx: typer.Context, json_out: JsonOpt = False, verbose: VerboseOpt = False) -> None:
    """The chat models on this machine by name (GGUF files in the Hugging Face cache, Ollama, LM
    Studio, ~/models; profiles of the config file; what reachable servers serve), the one `ask` uses
    marked. `--model NAME` and `ragcli models default NAME` take the names shown."""
    if ctx.invoked_subcommand is not None:
        return
    from ragcli import config
    from ragcli.models.factory import catalog
    from ragcli.render import models as render
    from ragcli.render.data import models_data, print_json

    data = catalog(config.model_settings(), config.profiles())
    if json_out:
        print_json(models_data(data))
    else:
        render.print_models(console(), data, verbose=verbose)


@models_app.command("default")
@handle_errors
def default_cmd(
    name: Annotated[str, typer.Argument(metavar="NAME", help="A model's name (`ragcli models` lists them), a "
                                        "GGUF file, a server URL or a profile.")],
    json_out: JsonOpt = False,
) -> None:
    """Make NAME the model `ask`, `chat` and `summary new` use when no --model is given (written to the
    config file as `default = "NAME"`)."""
    from ragcli import config
    from ragcli.models import names
    from ragcli.render.data import print_json

    value = name.strip()
    path = None
    if not (config.is_url(value) or value in config.profiles() or value.lower() == config.NO_MODEL):
        path = names.resolve(value)  # a name nothing answers to fails here, the config untouched
        if not Path(path).is_file():
            from ragcli.errors import NotFoundError

            raise NotFoundError(f"no model file {path}: `ragcli models` lists the models on this machine")
        if Path(value).expanduser().exists():  # a file: its short name when it has one, else its full path
            value = names.name_for(path) or str(Path(path).resolve())
    target = config.set_default_model(value, note="set by `ragcli models default`")
    if json_out:
        print_json({"default": value, "path": path, "config": str(target)})
    else:
        info(f"the default model is now {value}" + (f" ({path})" if path and path != value else "")
             + f": written to {target}")


@models_app.command("add")
@handle_errors
def add_cmd(
    file: Annotated[str, typer.Argument(metavar="FILE", help="A GGUF chat model on this machine.")],
    name: Annotated[Optional[str], typer.Option("--name", metavar="NAME", show_default=False,
                                                help="Its name (default: the file name without .gguf).")] = None,
    make_default: Annotated[bool, typer.Option("--default", help="Also make it the default model.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Give a local GGUF file a name that `--model NAME` and `models default NAME` take (a profile
    [models.NAME] in the config file); the file stays where it is."""
    from ragcli import config
    from ragcli.errors import InputError, UsageError
    from ragcli.models.gguf import gguf_facts
    from ragcli.render.data import print_json

    path = Path(file).expanduser()
    if not path.is_file():
        raise InputError(f"{file}: no such file")
    facts = gguf_facts(path)  # not a GGUF: one line, nothing written
    if facts.get("reranker"):
        raise UsageError(f"{path.name} is a reranker, not a chat model: give it to --rerank instead")
    chosen = (name or path.name.removesuffix(".gguf")).strip()
    if not chosen or "/" in chosen or config.is_url(chosen) or chosen.lower() == config.NO_MODEL:
        raise UsageError(f"{chosen!r} cannot name a model: choose a word without '/', e.g. --name my-model")
    target = config.add_profile(chosen, str(path.resolve()))
    if make_default or not config.model_configured():
        config.set_default_model(chosen, note="set by `ragcli models add`")
        made_default = True
    else:
        made_default = False
    if json_out:
        print_json({"name": chosen, "path": str(path.resolve()), "default": made_default, "config": str(target)})
    else:
        info(f"added {chosen}: {path.resolve()} ({facts.get('architecture')}, {facts.get('quantization')})"
             + ("; now the default model" if made_default else f"; `ragcli ask --model {chosen}` uses it, "
                f"`ragcli models default {chosen}` makes it the default"))


@models_app.command("pull")
@handle_errors
def pull_cmd(
    spec: Annotated[Optional[str], typer.Argument(
        metavar="NAME | REPO[/FILE] | URL", show_default=False,
        help="A catalogue name (`ragcli models pull` lists them), a Hugging Face repository (ORG/NAME), "
             "REPO/FILE.gguf, or a URL of a GGUF file.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Without a NAME: pull the largest catalogue model "
                                      "that fits this machine's memory and writes at reading pace on its "
                                      "cores.")] = False,
    sha256: Annotated[Optional[str], typer.Option("--sha256", metavar="HEX", help="The file's expected sha256 "
                                                  "(checked before it is used); without it a URL's file gets "
                                                  "its sha256 computed and shown.")] = None,
    json_out: JsonOpt = False, verbose: VerboseOpt = False,
) -> None:
    """Download a GGUF chat model: resumed when interrupted, its sha256 checked, and made the default
    model when none is configured yet. Without a NAME: the catalogue, the models that fit this
    machine marked (--verbose: titles, licences, what was measured)."""
    from ragcli import config
    from ragcli.models import catalogue, choice, download, hardware, names
    from ragcli.render.data import print_json
    from ragcli.render.download import PullProgress, catalog_view, pulled_line

    if spec is None:
        hw = hardware.detect()
        entries = catalogue.entries(hw)
        fits = {e.name: choice.estimate(e, hw) for e in entries}
        if not yes:
            if json_out:
                print_json({"memory_total": hw.memory_total, "physical_cores": hw.physical_cores,
                            "gpu_offload": hw.gpu_offload,
                            "models": [{**e.__dict__, "fits": fits[e.name].fits, "fits_memory": fits[e.name].fits_memory,
                                        "tokens_per_s_estimated": fits[e.name].tokens_per_s, "why": fits[e.name].why}
                                       for e in entries]})
            else:
                catalog_view(console(), entries, fits, hw, verbose=verbose)
                info("pull one: ragcli models pull NAME (or --yes for the largest that fits)")
            return
        best, fit = choice.best(entries, hw)
        if best is None:
            from ragcli.errors import NotFoundError

            raise NotFoundError(f"no catalogue model fits this machine ({hw.memory_total / 1e9:.1f} GB of memory, "
                                f"{hw.physical_cores} cores)")
        spec = best.name
        if not json_out:
            info(f"pulling {best.name} ({best.size_gb:.2f} GB), the largest that fits: {fit.why}")
    target = catalogue.target(spec, sha256)
    label = target.name or (f"{target.repo}/{target.file}" if target.file else target.repo)
    with PullProgress(label, json_out) as report:
        pulled = download.pull(target, report)
    name = pulled.name or names.name_for(pulled.path)
    if name is None:  # a file where no name reaches it (a URL's file kept elsewhere): named by a profile
        name = Path(pulled.path).name.lower().removesuffix(".gguf")
        if name not in config.profiles():
            config.add_profile(name, str(Path(pulled.path).resolve()))
    was = config.model_settings()
    made_default = None
    if not config.model_configured():
        made_default = str(config.set_default_model(name or pulled.path))
    if json_out:
        print_json({**pulled.__dict__, "name": name, "default": made_default is not None, "config": made_default})
        return
    info(pulled_line(pulled, made_default))
    if made_default is None:
        current = was.profile or was.path or was.url
        same = name is not None and current == name
        info(f"the default model {'is' if same else 'stays'} {current}"
             + ("" if same else f": `ragcli ask --model {name or pulled.path}` uses this one, "
                f"`ragcli models default {name or pulled.path}` makes it the default"))
    elif name:
        info(f"its name: {name} (`ragcli ask --model {name}`)")
