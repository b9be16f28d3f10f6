"""`python -m grader` is the `grade` command."""

from grader.launch import main

main(prog_name="grade")
