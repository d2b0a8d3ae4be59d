"""A tunebench `command` check: every city the answer lists appears in the sentence.

Reads {"case", "answer", "expected", "vars"} as JSON on stdin; prints {"pass", "score", "reason"}.
"""
import json
import sys

question = json.load(sys.stdin)
text = question["vars"]["text"].lower()
cities = question["answer"].get("cities", []) if isinstance(question["answer"], dict) else []
missing = [city for city in cities if city.lower() not in text]
score = 1.0 if not cities else (len(cities) - len(missing)) / len(cities)
if missing:
    reason = "not in the sentence: " + ", ".join(missing)
else:
    reason = "all %d cities are in the sentence" % len(cities)
print(json.dumps({"pass": not missing, "score": score, "reason": reason}))
