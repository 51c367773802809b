"""Portal routes of training, included under /jobs/ in the portal's namespace (``portal:training…``)."""

from django.urls import path

from .views import jobs

urlpatterns = [
    path("", jobs.training_home, name="jobs"),
    path("<uuid:cluster_id>/", jobs.training_page, name="training"),
    path("<uuid:cluster_id>/preflight/", jobs.training_preflight, name="training_preflight"),
    path("<uuid:cluster_id>/submit/", jobs.training_submit, name="training_submit"),
    path("<uuid:cluster_id>/files/", jobs.training_files, name="training_files"),
    path("<uuid:cluster_id>/files/upload/", jobs.training_upload, name="training_upload"),
    path("<uuid:cluster_id>/<uuid:job_id>/", jobs.job_page, name="training_job"),
    path("<uuid:cluster_id>/<uuid:job_id>/cancel/", jobs.job_cancel, name="training_job_cancel"),
    path("<uuid:cluster_id>/<uuid:job_id>/resubmit/", jobs.job_resubmit, name="training_job_resubmit"),
]
