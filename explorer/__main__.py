"""`python -m explorer`: the same command line as the `explorer` script; no logic of its own."""

from explorer.launch import run

if __name__ == "__main__":
    run()
