"""models: the chat models ragcli can use (profiles, GGUF files on this machine, servers)."""
from __future__ import annotations

from ragcli.cli.common import JsonOpt, app, console, handle_errors

# The library is imported inside the commands: `ragcli --help` imports every cli module and loads none of it.


@app.command("models")
@handle_errors
def models_cmd(json_out: JsonOpt = False) -> None:
    """Configured profiles, GGUF files found (Ollama, LM Studio, Hugging Face cache, ~/models) and what
    reachable servers serve; the model `ask` would use is marked."""
    from ragcli import config
    from ragcli.models.discovery import catalog
    from ragcli.render import models as render
    from ragcli.render.data import models_data, print_json

    data = catalog(config.model_settings(), config.profiles())
    if json_out:
        print_json(models_data(data))
    else:
        render.print_models(console(), data)
