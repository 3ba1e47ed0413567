from ragcli.cli import main

if __name__ == "__main__":  # not when a parsing worker process imports the parent's main module
    main()
