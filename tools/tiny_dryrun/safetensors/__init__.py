"""Dry-run stand-in for safetensors (tools/tiny_dryrun/run.sh): the file format only, for the dtypes the tiny model uses."""
