#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crows_site.settings")
    from django.core.management import execute_from_command_line

    from crows_site.env import database_away_in_one_line, settings_or_exit

    settings_or_exit("manage.py")

    with database_away_in_one_line("manage.py"):
        execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
