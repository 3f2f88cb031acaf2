"""FOCUS 1.2 allowed ServiceCategory values and the ServiceSubcategory values under each.

Copied from the FinOps Foundation's machine-readable FOCUS 1.2 rules (the validator's
``model-1.2.json``, rules ServiceCategory-C-003-M and ServiceSubcategory-C-003-M/-C-004-M).
Every category also allows ``Other (<category>)``.
"""

from __future__ import annotations

OWN_SUBCATEGORIES: dict[str, tuple[str, ...]] = {
    "AI and Machine Learning": (
        "AI Platforms",
        "Bots",
        "Generative AI",
        "Machine Learning",
        "Natural Language Processing",
    ),
    "Analytics": ("Analytics Platforms", "Business Intelligence", "Data Processing", "Search", "Streaming Analytics"),
    "Business Applications": ("Productivity and Collaboration",),
    "Compute": ("Containers", "End User Computing", "Quantum Compute", "Serverless Compute", "Virtual Machines"),
    "Databases": (
        "Caching",
        "Data Warehouses",
        "Ledger Databases",
        "NoSQL Databases",
        "Relational Databases",
        "Time Series Databases",
    ),
    "Developer Tools": (
        "Developer Platforms",
        "Continuous Integration and Deployment",
        "Development Environments",
        "Source Code Management",
        "Quality Assurance",
    ),
    "Identity": ("Identity and Access Management",),
    "Integration": ("API Management", "Messaging", "Workflow Orchestration"),
    "Internet of Things": ("IoT Analytics", "IoT Platforms"),
    "Management and Governance": (
        "Architecture",
        "Compliance",
        "Cost Management",
        "Data Governance",
        "Disaster Recovery",
        "Endpoint Management",
        "Observability",
        "Support",
    ),
    "Media": ("Content Creation", "Gaming", "Media Streaming", "Mixed Reality"),
    "Migration": ("Data Migration", "Resource Migration"),
    "Mobile": (),
    "Multicloud": ("Multicloud Integration",),
    "Networking": (
        "Application Networking",
        "Content Delivery",
        "Network Connectivity",
        "Network Infrastructure",
        "Network Routing",
        "Network Security",
    ),
    "Security": ("Secret Management", "Security Posture Management", "Threat Detection and Response"),
    "Storage": ("Backup Storage", "Block Storage", "File Storage", "Object Storage", "Storage Platforms"),
    "Web": ("Application Platforms",),
    "Other": (),
}
SERVICE_CATEGORIES = set(OWN_SUBCATEGORIES)
# ServiceSubcategory -> its one parent ServiceCategory
PARENT_CATEGORY = {
    sub: category for category, own in OWN_SUBCATEGORIES.items() for sub in (*own, f"Other ({category})")
}
