from harmonic.cli import main

main()
