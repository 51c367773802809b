"""Portal pages of the clusters app: thin htmx views over the serializers, services and readers
that REST uses (portal views and viewsets call the same serializers and services).

common.py     helpers of every page: the catalog choices of a form, errors by input, links
tabs.py       the cluster page and what each of its tabs shows
clusters.py   the list, the create form (catalog cascade, preflight), zone change, delete, activate
groups.py     the groups tab's actions: add, scale (explicit diff), delete
nodes.py      the nodes tab's actions: reboot, replace, delete; read-only diagnosis

A refusal (a domain error) is shown through ``instantstart.portal.errors.page_errors`` and the page
answers with the status REST gives the same refusal.
"""
