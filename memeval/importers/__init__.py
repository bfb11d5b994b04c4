"""Public memory benchmarks as scenarios (`memeval import`): LoCoMo and Letta's update set.

The user supplies the dataset file; nothing from it is shipped with memeval.
"""
