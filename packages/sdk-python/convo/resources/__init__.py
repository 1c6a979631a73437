from .channels import Channels
from .contacts import Contacts, ContactTags
from .conversations import Conversations
from .events import Events
from .files import Files
from .messages import Messages
from .orders import Orders
from .sandbox import Sandbox
from .tags import Tags
from .webhook_endpoints import WebhookEndpoints
from .workflows import Workflows

__all__ = [
    "Channels",
    "ContactTags",
    "Contacts",
    "Conversations",
    "Events",
    "Files",
    "Messages",
    "Orders",
    "Sandbox",
    "Tags",
    "WebhookEndpoints",
    "Workflows",
]
