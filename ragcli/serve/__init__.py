"""ragcli as a library for other tools: an MCP server over stdio (`mcp.py`) and an OpenAI-compatible
HTTP server (`http.py`), both over `library.Library`, which makes the same core calls the CLI makes
(ask, search, summary, store) and returns the CLI's `--json` shapes (render/data.py). The core does
not know it is served: cancellation is an exception raised from the callbacks it already takes.
"""
