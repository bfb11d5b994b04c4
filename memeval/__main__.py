from memeval.cli import main

main()
