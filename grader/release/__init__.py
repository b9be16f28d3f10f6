"""What a teacher hands out: a student release (``student.py``) and a Gradescope autograder
bundle (``gradescope.py``), both made from one assignment (``grader/assignment.py``)."""
