from llmsweep.cli import main

main()
